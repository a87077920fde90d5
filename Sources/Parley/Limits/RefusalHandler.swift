import NIOCore
import ParleyWire

/// The whole pipeline of a connection refused at accept. It waits for the first byte, because only that says
/// who is calling: a Parley peer (0xCF), or a device beginning TLS (0x16, a handshake record: a Parley dialler
/// reads the answer before TLS), is sent the close frame in the clear, then the connection is half-closed so the
/// frame is not lost to a reset; an app of the original debugger (0xCE) must never receive a Parley frame and is
/// just closed; anything else, or silence until the handshake timeout, is closed too. Everything read is discarded,
/// so a refused connection never buffers a frame.
final class RefusalHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// How long a refused peer gets to read the close frame and close its side.
    static let linger = TimeAmount.seconds(1)

    private let closeFrame: CloseFrame
    private let firstByteTimeout: TimeAmount
    private var answered = false
    private var timer: Scheduled<Void>?

    init(closeFrame: CloseFrame, firstByteTimeout: TimeAmount) {
        self.closeFrame = closeFrame
        self.firstByteTimeout = firstByteTimeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { arm(firstByteTimeout, context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        arm(firstByteTimeout, context: context)
        context.fireChannelActive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = unwrapInboundIn(data)
        guard !answered, let first = bytes.getInteger(at: bytes.readerIndex, as: UInt8.self) else { return }
        answered = true
        guard first == StartByte.parley.rawValue || first == DeviceTLS.handshakeRecordType else {
            context.close(promise: nil)
            return
        }
        var buffer = context.channel.allocator.buffer(capacity: FrameLayout.prefixSize + Frame.close(closeFrame).bodySize)
        Frame.close(closeFrame).write(to: &buffer)
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.writeAndFlush(wrapOutboundOut(buffer)).whenComplete { _ in
            loopBound.value.close(mode: .output, promise: nil)
        }
        arm(Self.linger, context: context)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // The peer closed its side (half-closure is allowed on Parley's channels): nothing more to wait for.
        if let event = event as? ChannelEvent, event == .inputClosed {
            context.close(promise: nil)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    private func arm(_ delay: TimeAmount, context: ChannelHandlerContext) {
        timer?.cancel()
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(in: delay) { loopBound.value.close(promise: nil) }
    }
}
