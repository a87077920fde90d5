import NIOCore
import ParleyWire

/// Enforces the handshake timeout where frames arrive, on the event loop: the deadline is met by the handshake's
/// frames reaching the channel, not by the business logic getting round to reading them, so a busy process
/// does not drop peers that answered in time.
///
/// On an accepted connection the clock starts with the first byte, not at the connection: an app of the original
/// Swift Talk debugger connects as soon as it finds the debugger and writes only on its first state change, maybe
/// minutes later, and never reconnects if dropped. A connection that sends nothing costs one slot of the
/// connection limits and is closed by the idle timeout; one that starts a frame must finish it in time (so a peer
/// dribbling bytes is dropped).
final class HandshakeDeadlineHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = FrameBatch
    typealias InboundOut = FrameBatch

    private let timeout: TimeAmount
    /// Handshake frames still to arrive before the deadline is met; asked when the first frames arrive, since an
    /// accepted connection's way of authenticating (and with it the number of frames) is known only from its first
    /// byte.
    private var remaining: Int?
    private let frames: () -> Int
    private let startsWithFirstByte: Bool
    private let onFirstBytes: (() -> Void)?
    private var deadline: SilenceTimer?

    init(timeout: TimeAmount, frames: @escaping () -> Int = { 1 }, startsWithFirstByte: Bool, onFirstBytes: (() -> Void)? = nil) {
        self.timeout = timeout
        self.frames = frames
        self.startsWithFirstByte = startsWithFirstByte
        self.onFirstBytes = onFirstBytes
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive && !startsWithFirstByte { arm(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        if !startsWithFirstByte { arm(context: context) }
        context.fireChannelActive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ReadActivityHandler.FirstBytes {
            onFirstBytes?()
            arm(context: context)
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let remaining = (self.remaining ?? frames()) - unwrapInboundIn(data).frames.count
        self.remaining = remaining
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

    /// The clock starts now and does not move: the deadline is the start plus the timeout.
    private func arm(context: ChannelHandlerContext) {
        guard deadline == nil else { return }
        let started = context.eventLoop.now
        let seconds = Double(timeout.nanoseconds) / 1e9
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        deadline = SilenceTimer(on: context.eventLoop, timeout: timeout, lastActivity: { started }) { _ in
            loopBound.value.fireErrorCaught(HandshakeError.timedOut(seconds: seconds))
        }
        deadline?.start()
    }
}
