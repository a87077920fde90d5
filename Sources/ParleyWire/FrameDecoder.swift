import NIOCore

/// Splits a byte stream into frames. It never consumes bytes until a whole frame is buffered, and it refuses a
/// frame whose announced length exceeds `maximumBodySize` before buffering any of it.
public struct FrameDecoder: NIOSingleStepByteToMessageDecoder {
    public typealias InboundOut = Frame

    public let maximumBodySize: Int
    /// The type name of the last message decoded, for the next one of the same type to share.
    private var lastTypeName: String?

    public init(maximumBodySize: Int = FrameLayout.defaultMaximumBodySize) {
        self.maximumBodySize = maximumBodySize
    }

    public mutating func decode(buffer: inout ByteBuffer) throws -> Frame? {
        guard let first = buffer.getInteger(at: buffer.readerIndex, as: UInt8.self) else { return nil }
        guard first == StartByte.parley.rawValue else { throw WireError.unexpectedStartByte(first) }
        guard let rawLength = FrameLayout.announcedBodyLength(in: buffer) else { return nil }
        let length = Int(rawLength)
        guard length <= maximumBodySize else { throw WireError.frameTooLarge(length: length, maximum: maximumBodySize) }
        guard buffer.readableBytes >= FrameLayout.prefixSize + length else { return nil }
        buffer.moveReaderIndex(forwardBy: FrameLayout.prefixSize)
        let body = buffer.readSlice(length: length)!
        return try Frame.parse(body: body, sharingTypeName: &lastTypeName)
    }

    public mutating func decodeLast(buffer: inout ByteBuffer, seenEOF: Bool) throws -> Frame? {
        if let frame = try decode(buffer: &buffer) { return frame }
        guard buffer.readableBytes > 0 else { return nil }
        throw FrameLayout.truncation(of: buffer)
    }
}
