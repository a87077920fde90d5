import NIOCore

/// The framing of the original Swift Talk remote debugger, which apps written against it speak unchanged:
/// byte 206 (0xCE), the body length as a 4-byte little-endian integer, the body (JSON). There is no handshake,
/// no message type, no reply and no goodbye.
///
/// A connection's first byte says which framing it speaks, once: an accepted connection whose first byte is 206
/// gets a pipeline of its own (``OriginalFrameDecoder``, ``OriginalFrameEncoder`` and an
/// ``OriginalFramingTranslator``) that turns its frames into Parley messages and back. Nothing above that
/// pipeline knows the framing exists.
public enum OriginalFraming {
    public static let startByte = StartByte.originalFraming.rawValue
    /// In the capabilities of the hello the pipeline writes for such an app, so that people can tell it apart.
    public static let capability = "original-framing"
}

/// Translates between the original framing's frame bodies and Parley messages. The debugger supplies one (an
/// app's frame is a state record; a restore goes back as a frame); the transport only moves bytes.
public protocol OriginalFramingTranslator: Sendable {
    /// The message types such an app can receive: the hello the pipeline writes for it lists them.
    var accepts: [String] { get }

    /// The Parley message a frame body from the app stands for. Throwing drops this frame (the error is logged,
    /// throttled) and keeps the connection: the app's next frame may well be fine.
    func message(fromFrameBody body: ByteBuffer) throws -> (typeName: String, payload: ByteBuffer)

    /// The frame body that carries a Parley message to the app; nil for a type the app cannot receive.
    func frameBody(forMessage typeName: String, payload: ByteBuffer) -> ByteBuffer?
}

/// Splits a byte stream in the original framing into frame bodies. Like ``FrameDecoder`` it refuses a frame
/// whose announced length exceeds `maximumBodySize` before buffering any of it.
public struct OriginalFrameDecoder: NIOSingleStepByteToMessageDecoder {
    public typealias InboundOut = ByteBuffer

    public let maximumBodySize: Int

    public init(maximumBodySize: Int = FrameLayout.defaultMaximumBodySize) {
        self.maximumBodySize = maximumBodySize
    }

    public mutating func decode(buffer: inout ByteBuffer) throws -> ByteBuffer? {
        guard let first = buffer.getInteger(at: buffer.readerIndex, as: UInt8.self) else { return nil }
        guard first == OriginalFraming.startByte else { throw WireError.unexpectedStartByte(first) }
        guard let rawLength = FrameLayout.announcedBodyLength(in: buffer) else { return nil }
        // The original app writes the length as a signed Int32.
        guard Int32(bitPattern: rawLength) >= 0 else { throw WireError.negativeLength(Int32(bitPattern: rawLength)) }
        let length = Int(rawLength)
        guard length <= maximumBodySize else { throw WireError.frameTooLarge(length: length, maximum: maximumBodySize) }
        guard buffer.readableBytes >= FrameLayout.prefixSize + length else { return nil }
        buffer.moveReaderIndex(forwardBy: FrameLayout.prefixSize)
        return buffer.readSlice(length: length)!
    }

    public mutating func decodeLast(buffer: inout ByteBuffer, seenEOF: Bool) throws -> ByteBuffer? {
        if let body = try decode(buffer: &buffer) { return body }
        guard buffer.readableBytes > 0 else { return nil }
        throw FrameLayout.truncation(of: buffer)
    }
}

/// Writes frame bodies in the original framing. Like ``FrameEncoder``, a large body goes to the socket as its own
/// buffer behind the 5-byte prefix instead of being copied.
public final class OriginalFrameEncoder: ChannelOutboundHandler, RemovableChannelHandler {
    public typealias OutboundIn = ByteBuffer
    public typealias OutboundOut = ByteBuffer

    public init() {}

    public func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let body = unwrapOutboundIn(data)
        if body.readableBytes > FrameEncoder.copyThreshold {
            var prefix = context.channel.allocator.buffer(capacity: FrameLayout.prefixSize)
            Self.writePrefix(bodySize: body.readableBytes, to: &prefix)
            context.write(wrapOutboundOut(prefix), promise: nil)
            context.write(wrapOutboundOut(body), promise: promise)
        } else {
            var frame = context.channel.allocator.buffer(capacity: FrameLayout.prefixSize + body.readableBytes)
            Self.write(body, to: &frame)
            context.write(wrapOutboundOut(frame), promise: promise)
        }
    }

    /// Appends one whole frame carrying `body` to `buffer`.
    public static func write(_ body: ByteBuffer, to buffer: inout ByteBuffer) {
        buffer.reserveCapacity(minimumWritableBytes: FrameLayout.prefixSize + body.readableBytes)
        writePrefix(bodySize: body.readableBytes, to: &buffer)
        buffer.writeImmutableBuffer(body)
    }

    private static func writePrefix(bodySize: Int, to buffer: inout ByteBuffer) {
        buffer.writeInteger(OriginalFraming.startByte)
        buffer.writeInteger(UInt32(bodySize), endianness: .little)
    }
}
