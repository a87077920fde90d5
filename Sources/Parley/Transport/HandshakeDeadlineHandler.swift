import NIOCore
import ParleyWire

/// Enforces the handshake timeout where frames arrive, on the event loop: the deadline is met by the first
/// frame reaching the channel, not by the business logic getting round to reading it, so a busy process
/// does not drop peers that answered in time.
final class HandshakeDeadlineHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = Frame
    typealias InboundOut = Frame

    private let timeout: TimeAmount
    private var deadline: Scheduled<Void>?

    init(timeout: TimeAmount) { self.timeout = timeout }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { arm(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        arm(context: context)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        deadline?.cancel()
        deadline = nil
        context.fireChannelRead(data)
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
    }

    private func arm(context: ChannelHandlerContext) {
        guard deadline == nil else { return }
        let seconds = Double(timeout.nanoseconds) / 1e9
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        deadline = context.eventLoop.scheduleTask(in: timeout) {
            loopBound.value.fireErrorCaught(HandshakeError.timedOut(seconds: seconds))
        }
    }
}
