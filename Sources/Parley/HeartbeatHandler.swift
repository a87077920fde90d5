import NIOCore
import ParleyWire

/// Keeps a connection's liveness known: after the handshake it pings when the connection has been quiet
/// for `interval`, answers pings with pongs, and closes the connection when nothing at all has arrived for
/// `timeout`. Pings and pongs never leave this handler, so the business logic only sees messages.
final class HeartbeatHandler: ChannelDuplexHandler {
    typealias InboundIn = Frame
    typealias InboundOut = Frame
    typealias OutboundIn = Frame
    typealias OutboundOut = Frame

    /// Sent as a user outbound event once the handshake has succeeded with a peer that speaks heartbeats.
    struct Start: Sendable {}

    private let interval: TimeAmount
    private let timeout: TimeAmount
    private var lastRead = NIODeadline.now()
    private var wroteSinceTick = false
    private var ticker: RepeatedTask?
    private var nonce: UInt64 = 0

    init(interval: TimeAmount, timeout: TimeAmount) {
        self.interval = interval
        self.timeout = timeout
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        lastRead = .now()
        switch unwrapInboundIn(data) {
        case .ping(let nonce):
            context.writeAndFlush(wrapOutboundOut(.pong(nonce)), promise: nil)
        case .pong:
            break
        default:
            context.fireChannelRead(data)
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        wroteSinceTick = true
        context.write(data, promise: promise)
    }

    func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        guard event is Start else {
            context.triggerUserOutboundEvent(event, promise: promise)
            return
        }
        promise?.succeed()
        guard ticker == nil else { return }
        lastRead = .now()
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        ticker = context.eventLoop.scheduleRepeatedTask(initialDelay: interval, delay: interval) { _ in
            let (handler, context) = loopBound.value
            handler.tick(context: context)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        ticker?.cancel()
        ticker = nil
    }

    func channelInactive(context: ChannelHandlerContext) {
        ticker?.cancel()
        ticker = nil
        context.fireChannelInactive()
    }

    private func tick(context: ChannelHandlerContext) {
        if NIODeadline.now() - lastRead > timeout {
            ticker?.cancel()
            ticker = nil
            context.fireErrorCaught(HeartbeatTimeout(silence: NIODeadline.now() - lastRead))
            context.close(promise: nil)
            return
        }
        if !wroteSinceTick {
            nonce &+= 1
            context.writeAndFlush(wrapOutboundOut(.ping(nonce)), promise: nil)
        }
        wroteSinceTick = false
    }
}

/// Nothing arrived from the peer for longer than the heartbeat timeout: it vanished without saying goodbye.
struct HeartbeatTimeout: Error, CustomStringConvertible {
    var silence: TimeAmount
    var description: String {
        "no data or heartbeat from the peer for \(Double(silence.nanoseconds) / 1e9) s; it is presumed gone"
    }
}
