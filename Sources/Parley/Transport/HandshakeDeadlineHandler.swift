import NIOCore
import ParleyWire

/// Enforces the handshake timeout where frames arrive, on the event loop: the deadline is met by the handshake's
/// frames reaching the channel, not by the business logic getting round to reading them, so a busy process
/// does not drop peers that answered in time. An app of the original debugger has no handshake: its first
/// frame meets the deadline whatever the count.
final class HandshakeDeadlineHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = Frame
    typealias InboundOut = Frame

    private let timeout: TimeAmount
    /// Handshake frames still to arrive before the deadline is met.
    private var remaining: Int
    private var deadline: Scheduled<Void>?

    init(timeout: TimeAmount, frames: Int = 1) {
        self.timeout = timeout
        self.remaining = frames
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { arm(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        arm(context: context)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        remaining -= 1
        if case .legacyDebugger = unwrapInboundIn(data) { remaining = 0 }
        guard remaining <= 0 else {
            context.fireChannelRead(data)
            return
        }
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
