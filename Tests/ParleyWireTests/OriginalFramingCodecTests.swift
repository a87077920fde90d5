import NIOCore
import NIOEmbedded
import ParleyWire
import Testing

@Suite("Original framing codec (0xCE, little-endian length, JSON) on an EmbeddedChannel")
struct OriginalFramingCodecTests {
    static func frame(_ json: String, length: Int32? = nil) -> ByteBuffer {
        var buffer = ByteBuffer(bytes: [206])
        buffer.writeInteger(length ?? Int32(json.utf8.count), endianness: .little)
        buffer.writeString(json)
        return buffer
    }

    static func channel(maximum: Int = 1024) throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(OriginalFrameDecoder(maximumBodySize: maximum)))
        try channel.pipeline.syncOperations.addHandler(OriginalFrameEncoder())
        return channel
    }

    @Test("a frame written by the original app decodes to its exact body, also when it arrives byte by byte")
    func decodesSplit() throws {
        let channel = try Self.channel()
        let json = #"{"state":{"a":1},"action":"tap","imageData":""}"#
        var wire = Self.frame(json)
        wire.writeImmutableBuffer(Self.frame("{}"))
        while let byte = wire.readSlice(length: 1) {
            try channel.writeInbound(byte)
        }
        #expect(try channel.readInbound(as: ByteBuffer.self) == ByteBuffer(string: json))
        #expect(try channel.readInbound(as: ByteBuffer.self) == ByteBuffer(string: "{}"))
        #expect(try channel.readInbound(as: ByteBuffer.self) == nil)
        #expect(try channel.finish().isClean)
    }

    @Test("a body written out is framed exactly as the original app expects; a large one is not copied behind the prefix")
    func encodes() throws {
        let channel = try Self.channel()
        try channel.writeOutbound(ByteBuffer(string: #"{"a":1}"#))
        #expect(try channel.readOutbound(as: ByteBuffer.self) == Self.frame(#"{"a":1}"#))
        let large = ByteBuffer(repeating: UInt8(ascii: "7"), count: FrameEncoder.copyThreshold + 1)
        try channel.writeOutbound(large)
        var prefix = try #require(try channel.readOutbound(as: ByteBuffer.self))
        #expect(prefix.readInteger(as: UInt8.self) == 206)
        #expect(prefix.readInteger(endianness: .little, as: UInt32.self) == UInt32(large.readableBytes))
        #expect(try channel.readOutbound(as: ByteBuffer.self) == large)
        _ = try channel.finish()
    }

    @Test("a negative length, a length above the maximum, a Parley start byte: each refused with its own error")
    func refusals() throws {
        let negative = try Self.channel()
        #expect(throws: WireError.negativeLength(-5)) { try negative.writeInbound(Self.frame("", length: -5)) }
        let oversized = try Self.channel(maximum: 16)
        // Refused from the prefix alone: nothing of the body needs to arrive.
        var prefix = ByteBuffer(bytes: [206])
        prefix.writeInteger(Int32(17), endianness: .little)
        #expect(throws: WireError.frameTooLarge(length: 17, maximum: 16)) { try oversized.writeInbound(prefix) }
        let parley = try Self.channel()
        #expect(throws: WireError.unexpectedStartByte(207)) { try parley.writeInbound(ByteBuffer(bytes: [207, 0, 0, 0, 0])) }
    }

    @Test("the connection closing inside a frame reports how much of it came")
    func truncated() throws {
        let channel = try Self.channel()
        var partial = Self.frame(#"{"state":1,"action":"x"}"#)
        partial.moveWriterIndex(to: 10)
        try channel.writeInbound(partial)
        #expect(try channel.readInbound(as: ByteBuffer.self) == nil)
        #expect(throws: WireError.truncatedFrame(expected: 29, received: 10)) { try channel.finish() }
    }
}
