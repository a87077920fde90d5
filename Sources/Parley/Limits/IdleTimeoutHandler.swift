import NIOCore
import ParleyWire

/// Closes a connection over which no message has gone either way for `timeout`: it frees the slot of a peer
/// that stays connected without using the connection, and of one that vanished without heartbeats (which
/// nothing else would notice). Only messages and error replies count; pings and
/// pongs do not, since they prove the peer alive, not useful. Control-socket clients are exempt (a
/// `parleyctl listen` waits legitimately for as long as it likes).
final class IdleTimeoutHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = FrameBatch
    typealias InboundOut = FrameBatch
    typealias OutboundIn = FrameBatch
    typealias OutboundOut = FrameBatch

    private let timeout: Duration
    /// On the event loop's clock.
    private var lastMessage = NIODeadline.now()
    /// A message went by since the clock was last read: read it once per socket read and once per flush, not
    /// once per message.
    private var messageRead = false
    private var messageWritten = false
    private var timer: SilenceTimer?

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
        if !messageRead, unwrapInboundIn(data).frames.contains(where: Self.isMessage) { messageRead = true }
        context.fireChannelRead(data)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if messageRead {
            messageRead = false
            lastMessage = context.eventLoop.now
        }
        context.fireChannelReadComplete()
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if !messageWritten, unwrapOutboundIn(data).frames.contains(where: Self.isMessage) { messageWritten = true }
        context.write(data, promise: promise)
    }

    func flush(context: ChannelHandlerContext) {
        if messageWritten {
            messageWritten = false
            lastMessage = context.eventLoop.now
        }
        context.flush()
    }

    private static func isMessage(_ frame: Frame) -> Bool {
        switch frame {
        case .message, .errorReply: true
        case .hello, .auth, .ping, .pong, .close, .sealed: false
        }
    }

    private func start(context: ChannelHandlerContext) {
        guard timer == nil, !context.channel.isLocalSocket else { return }
        lastMessage = context.eventLoop.now
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        timer = SilenceTimer(on: context.eventLoop, timeout: TimeAmount(timeout), lastActivity: { loopBound.value.0.lastMessage }) { _ in
            let (handler, context) = loopBound.value
            handler.timer = nil
            context.fireErrorCaught(ConnectionLimitExceeded.idle(timeout: handler.timeout))
        }
        timer?.start()
    }

    private func stop() {
        timer?.cancel()
        timer = nil
    }
}
