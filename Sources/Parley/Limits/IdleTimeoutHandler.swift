import NIOCore
import ParleyWire

/// Closes a connection over which no message has gone either way for `timeout`: it frees the slot of a peer
/// that stays connected without using the connection, and of one that vanished without heartbeats (which
/// nothing else would notice). Only messages and error replies count; pings and
/// pongs do not, since they prove the peer alive, not useful. Control-socket clients are exempt (a
/// `parleyctl listen` waits legitimately for as long as it likes).
final class IdleTimeoutHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = Frame
    typealias InboundOut = Frame
    typealias OutboundIn = Frame
    typealias OutboundOut = Frame

    private let timeout: Duration
    private var lastMessage = NIODeadline.now()
    private var check: Scheduled<Void>?
    private var started = false

    init(timeout: Duration) { self.timeout = timeout }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { start(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        start(context: context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        stop()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) { stop() }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if Self.isMessage(unwrapInboundIn(data)) { lastMessage = .now() }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if Self.isMessage(unwrapOutboundIn(data)) { lastMessage = .now() }
        context.write(data, promise: promise)
    }

    private static func isMessage(_ frame: Frame) -> Bool {
        switch frame {
        case .message, .errorReply: true
        case .hello, .auth, .ping, .pong, .close, .sealed: false
        }
    }

    private func start(context: ChannelHandlerContext) {
        guard !started else { return }
        started = true
        guard !context.channel.isLocalSocket else { return }
        lastMessage = .now()
        schedule(at: lastMessage + TimeAmount(timeout), context: context)
    }

    private func stop() {
        check?.cancel()
        check = nil
    }

    /// One timer per connection, re-armed only when it fires: a busy connection costs no timer work per message.
    private func schedule(at deadline: NIODeadline, context: ChannelHandlerContext) {
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        check = context.eventLoop.scheduleTask(deadline: deadline) {
            let (handler, context) = loopBound.value
            handler.expire(context: context)
        }
    }

    private func expire(context: ChannelHandlerContext) {
        check = nil
        let due = lastMessage + TimeAmount(timeout)
        let now = NIODeadline.now()
        guard now >= due else {
            schedule(at: due, context: context)
            return
        }
        // Messages may be waiting unread while the loop is busy elsewhere: only a loop that has polled since the
        // deadline knows there were none.
        guard EventLoopPulse.of(context.eventLoop).hasPolled(since: due) else {
            schedule(at: now + EventLoopPulse.recheckDelay, context: context)
            return
        }
        context.fireErrorCaught(ConnectionLimitExceeded.idle(timeout: timeout))
    }
}
