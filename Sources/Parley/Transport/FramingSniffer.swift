import NIOCore
import ParleyWire

/// Which framing an accepted TCP connection speaks, decided once by its first byte: 0xCE is the original Swift
/// Talk debugger framing, anything else is treated as Parley (so that garbage is refused by the Parley frame
/// decoder, with a close frame that says why).
enum Framing: Sendable, Equatable {
    case parley
    case original

    init(firstByte: UInt8) {
        self = firstByte == OriginalFraming.startByte ? .original : .parley
    }
}

/// Sits where the framing handlers of an accepted connection will go. On the first bytes it asks `install` to
/// put the decoder and encoder of the connection's framing in its place, hands the bytes on to them and leaves
/// the pipeline. If `install` refuses the framing, the error goes up the pipeline (the business logic logs it and
/// closes the connection) and every later byte is discarded.
///
/// Until a framing is installed there is nothing that could encode a frame for this connection, and nothing to say
/// to a peer whose language is unknown: frames written meanwhile (a goodbye at shutdown, a refusal) are dropped.
final class FramingSniffer: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = FrameBatch
    typealias OutboundOut = ByteBuffer

    private let install: (Framing, ChannelHandlerContext) throws -> Void
    private var refused = false

    init(install: @escaping (Framing, ChannelHandlerContext) throws -> Void) {
        self.install = install
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !refused else { return }
        let bytes = unwrapInboundIn(data)
        guard let first = bytes.getInteger(at: bytes.readerIndex, as: UInt8.self) else { return }
        do {
            try install(Framing(firstByte: first), context)
        } catch {
            refused = true
            context.fireErrorCaught(error)
            return
        }
        context.fireChannelRead(data)
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        promise?.succeed()
    }
}
