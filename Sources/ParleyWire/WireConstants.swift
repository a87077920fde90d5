import NIOCore

/// The first byte of every frame. A connection's first byte says which framing it speaks, for good.
public enum StartByte: UInt8, Sendable, CaseIterable {
    /// The original Swift Talk remote debugger's framing (see ``OriginalFrameDecoder``): the body is JSON.
    case originalFraming = 206
    /// A Parley frame: the body begins with a one-byte ``FrameKind``.
    case parley = 207
}

/// The kind byte that opens the body of every Parley frame.
public enum FrameKind: UInt8, Sendable, CaseIterable {
    case hello = 0x01
    /// A proof of the shared secret, exchanged during an authenticated handshake.
    case auth = 0x02
    /// Every frame after an authenticated handshake: the AEAD ciphertext of an inner frame's body.
    case sealed = 0x03
    case message = 0x10
    case errorReply = 0x11
    case ping = 0x20
    case pong = 0x21
    case close = 0x30
}

/// The protocol versions this build speaks.
public enum ProtocolVersion {
    public static let current: UInt16 = 1
    public static let minimumSupported: UInt16 = 1
}

/// Sizes of the fixed parts of a frame, in bytes.
public enum FrameLayout {
    /// Start byte plus the 4-byte little-endian body length.
    public static let prefixSize = 5
    /// Message frame fields before the type name: kind, flags, id, in-reply-to, type-name length.
    public static let messageFixedHeaderSize = 1 + 1 + 8 + 8 + 2
    /// The longest type name a frame may carry.
    public static let maximumTypeNameLength = 1024
    /// The default cap on a frame body: 64 MiB.
    public static let defaultMaximumBodySize = 64 * 1024 * 1024
    /// Bytes a sealed frame's body adds to the body of the frame it carries: its own kind byte and the 16-byte
    /// AEAD tag. (Also the shortest valid sealed body: an inner kind byte and a tag.)
    public static let sealedOverhead = 1 + 16

    /// The body length announced by the prefix of the frame `buffer` starts with; nil until all 5 bytes of the
    /// prefix are there. Both framings share the prefix: the start byte, then the length, little-endian.
    static func announcedBodyLength(in buffer: ByteBuffer) -> UInt32? {
        buffer.getInteger(at: buffer.readerIndex + 1, endianness: .little, as: UInt32.self)
    }

    /// The error for a connection that ended inside a frame: how many bytes the frame's prefix announced (the
    /// prefix alone if even that was cut), and how many came.
    static func truncation(of buffer: ByteBuffer) -> WireError {
        let announced = announcedBodyLength(in: buffer).map { Int($0) + prefixSize }
        return .truncatedFrame(expected: announced ?? prefixSize, received: buffer.readableBytes)
    }
}
