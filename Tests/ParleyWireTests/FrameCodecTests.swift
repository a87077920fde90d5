import NIOCore
import NIOEmbedded
import NIOTestUtils
import ParleyWire
import Testing

@Suite("Frame codec")
struct FrameCodecTests {
    static func buffer(_ string: String) -> ByteBuffer { ByteBuffer(string: string) }

    static let samples: [Frame] = [
        .hello(HelloFrame(minimumVersion: 1, maximumVersion: 3, body: buffer(#"{"peerID":"x"}"#))),
        .auth(buffer("proof")),
        .sealed(ByteBuffer(bytes: Array(0..<40))),
        .message(MessageFrame(header: MessageHeader(typeName: "listr.AddItemCommand", id: MessageID(7)), payload: buffer(#"{"title":"milk"}"#))),
        .message(
            MessageFrame(
                header: MessageHeader(typeName: "a.Reply", id: MessageID(9), inReplyTo: MessageID(7), flags: .expectsReply),
                payload: buffer("")
            )
        ),
        .errorReply(ErrorReplyFrame(inReplyTo: MessageID(3), code: .unknownType, message: "no handler for \"x\"")),
        .ping(42), .pong(.max),
        .close(CloseFrame(code: .goingAway, message: "bye ✌️")),
    ]

    @Test("every frame kind survives encode → decode on an EmbeddedChannel")
    func roundTrip() throws {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(FrameBatchDecoder())
        try channel.pipeline.syncOperations.addHandler(FrameEncoder())
        for frame in Self.samples {
            try channel.writeOutbound(FrameBatch([frame]))
            // Loop the written bytes back into the decoder.
            while let bytes = try channel.readOutbound(as: ByteBuffer.self) { try channel.writeInbound(bytes) }
            #expect(try channel.readInbound(as: FrameBatch.self) == FrameBatch([frame]))
        }
        #expect(try channel.finish().isClean)
    }

    @Test("large payloads are written as a separate buffer, not copied")
    func largePayloadIsVectored() throws {
        let channel = EmbeddedChannel(handler: FrameEncoder())
        let payload = ByteBuffer(repeating: 0x41, count: 1 << 20)
        let frame = Frame.message(MessageFrame(header: MessageHeader(typeName: "t", id: MessageID(1)), payload: payload))
        try channel.writeOutbound(FrameBatch([frame]))
        let header = try #require(try channel.readOutbound(as: ByteBuffer.self))
        let body = try #require(try channel.readOutbound(as: ByteBuffer.self))
        #expect(header.readableBytes == FrameLayout.prefixSize + FrameLayout.messageFixedHeaderSize + 1)
        #expect(body == payload)
        _ = try channel.finish()
    }

    @Test("small frames written between two flushes leave as one buffer at the flush, in order, around a large one; every write's promise completes")
    func smallFramesCoalesce() throws {
        let channel = EmbeddedChannel(handler: FrameEncoder())
        let small = (1...3).map { Frame.message(MessageFrame(header: MessageHeader(typeName: "t", id: MessageID($0)), payload: Self.buffer("{}"))) }
        let large = Frame.message(MessageFrame(header: MessageHeader(typeName: "t", id: MessageID(4)), payload: ByteBuffer(repeating: 0x41, count: 10_000)))
        let promises = (0..<4).map { _ in channel.eventLoop.makePromise(of: Void.self) }
        channel.write(FrameBatch([small[0]]), promise: promises[0])
        channel.write(FrameBatch([small[1]]), promise: promises[1])
        #expect(try channel.readOutbound(as: ByteBuffer.self) == nil, "nothing before the flush")
        channel.write(FrameBatch([large]), promise: promises[2])
        channel.writeAndFlush(FrameBatch([small[2]]), promise: promises[3])

        var expected = ByteBuffer()
        for frame in small[0...1] { frame.write(to: &expected) }
        #expect(try channel.readOutbound(as: ByteBuffer.self) == expected, "the two small frames, as one buffer, before the large one")
        var bytes = ByteBuffer()
        while var next = try channel.readOutbound(as: ByteBuffer.self) { bytes.writeBuffer(&next) }
        var rest = ByteBuffer()
        large.write(to: &rest)
        small[2].write(to: &rest)
        #expect(bytes == rest)
        let outcomes = Self.outcomes(of: promises)
        #expect(outcomes.results == ["ok", "ok", "ok", "ok"])

        // A lone small frame is written in a buffer of its own size, not a gathering buffer.
        channel.writeAndFlush(FrameBatch([small[0]]), promise: nil)
        let lone = try #require(try channel.readOutbound(as: ByteBuffer.self))
        #expect(lone.capacity < 256, "a \(lone.readableBytes)-byte frame took a \(lone.capacity)-byte buffer")

        // Gathering stops at 64 KiB: what follows goes in the next buffer, however long until the flush.
        let many = (1...600).map { Frame.message(MessageFrame(header: MessageHeader(typeName: "t", id: MessageID($0)), payload: ByteBuffer(repeating: 0x42, count: 100))) }
        let manyWritten = channel.eventLoop.makePromise(of: Void.self)
        channel.write(FrameBatch(many), promise: manyWritten)
        let manyOutcome = Self.outcomes(of: [manyWritten])
        #expect(manyOutcome.results.isEmpty, "a batch's promise waits for its last frame to be written")
        channel.flush()
        #expect(manyOutcome.results == ["ok"])
        var buffers: [Int] = []
        while let next = try channel.readOutbound(as: ByteBuffer.self) { buffers.append(next.readableBytes) }
        #expect(buffers.count == 2)
        #expect(buffers[0] >= FrameEncoder.coalesceLimit && buffers[0] < FrameEncoder.coalesceLimit + many[0].wireSize)
        #expect(buffers.reduce(0, +) == many.reduce(0) { $0 + $1.wireSize })

        // A batch ending in a large frame completes once, with the payload's write; an empty batch completes in order.
        let mixed = channel.eventLoop.makePromise(of: Void.self)
        let empty = channel.eventLoop.makePromise(of: Void.self)
        channel.write(FrameBatch([small[0], large]), promise: mixed)
        channel.write(FrameBatch([]), promise: empty)
        let mixedOutcomes = Self.outcomes(of: [mixed, empty])
        channel.flush()
        #expect(mixedOutcomes.results == ["ok", "ok"])
        var gatheredSmall = try #require(try channel.readOutbound(as: ByteBuffer.self))
        #expect(gatheredSmall.capacity < 256, "room for the small frame only, not the large payload: \(gatheredSmall.capacity)")
        var decoder = FrameDecoder()
        #expect(try decoder.decode(buffer: &gatheredSmall) == small[0])
        while try channel.readOutbound(as: ByteBuffer.self) != nil {}

        // Written, never flushed, then closed: the write fails as NIO's own would.
        let unflushed = channel.eventLoop.makePromise(of: Void.self)
        channel.write(FrameBatch([small[0]]), promise: unflushed)
        let closing = Self.outcomes(of: [unflushed])
        _ = try channel.finish(acceptAlreadyClosed: true)
        #expect(closing.results == ["\(ChannelError.ioOnClosedChannel)"])
    }

    /// Records how each promise completed ("ok" or the error), without waiting: one never completed is missing.
    final class Outcomes {
        var results: [String] = []
    }

    static func outcomes(of promises: [EventLoopPromise<Void>]) -> Outcomes {
        let outcomes = Outcomes()
        for promise in promises {
            promise.futureResult.assumeIsolated().whenComplete { result in
                switch result {
                case .success: outcomes.results.append("ok")
                case .failure(let error): outcomes.results.append("\(error)")
                }
            }
        }
        return outcomes
    }

    @Test("the decoder yields the same frames whether bytes come one at a time or in batches")
    func byteAtATime() throws {
        let pairs: [(ByteBuffer, [Frame])] = Self.samples.map { frame in
            var buffer = ByteBuffer()
            frame.write(to: &buffer)
            return (buffer, [frame])
        }
        try ByteToMessageDecoderVerifier.verifyDecoder(inputOutputPairs: pairs) { FrameDecoder() }
    }

    static func bytes(_ frames: [Frame]) -> ByteBuffer {
        var buffer = ByteBuffer()
        for frame in frames { frame.write(to: &buffer) }
        return buffer
    }

    /// Writes `stream` into `channel` in reads of `readSize` bytes (the last one shorter) and returns the batches
    /// passed on, in order.
    static func batches(of stream: ByteBuffer, inReadsOf readSize: Int, into channel: EmbeddedChannel) throws -> [FrameBatch] {
        var batches: [FrameBatch] = []
        for offset in stride(from: 0, to: stream.readableBytes, by: readSize) {
            try channel.writeInbound(stream.getSlice(at: offset, length: min(readSize, stream.readableBytes - offset))!)
            while let batch = try channel.readInbound(as: FrameBatch.self) { batches.append(batch) }
        }
        return batches
    }

    @Test("a message of the same type as the one before shares its type name; another type, even of the same length, gets its own")
    func typeNameShared() throws {
        func message(_ typeName: String, _ id: UInt64) -> Frame {
            .message(MessageFrame(header: MessageHeader(typeName: typeName, id: MessageID(id)), payload: Self.buffer("{}")))
        }
        // Longer than 15 bytes: a string of its own in memory, not one stored inline.
        // The last differs from the one before in its last byte only (compared after the 8-byte words).
        let names = [
            "@bench-receiver/listr.Add", "@bench-receiver/listr.Add", "@bench-receiver/listr.Del", "@bench-receiver/listr.Del",
            "@bench-receiver/listr.Dem",
        ]
        var stream = Self.bytes(names.enumerated().map { message($1, UInt64($0 + 1)) })
        var decoder = FrameDecoder()
        var decoded: [String] = []
        while let frame = try decoder.decode(buffer: &stream) {
            guard case .message(let decodedMessage) = frame else { Issue.record("not a message: \(frame)"); return }
            decoded.append(decodedMessage.header.typeName)
        }
        #expect(decoded == names)
        func storage(_ string: String) -> UnsafeRawPointer? {
            string.utf8.withContiguousStorageIfAvailable { UnsafeRawPointer($0.baseAddress) } ?? nil
        }
        #expect(storage(decoded[0]) != nil && storage(decoded[0]) == storage(decoded[1]))
        #expect(storage(decoded[1]) != storage(decoded[2]))
        #expect(storage(decoded[2]) == storage(decoded[3]))
        #expect(storage(decoded[3]) != storage(decoded[4]))
    }

    @Test("the batching decoder passes on, per read, the frames that read completed, whatever the split")
    func batches() throws {
        let channel = EmbeddedChannel(handler: FrameBatchDecoder())
        try channel.writeInbound(Self.bytes(Self.samples))
        #expect(try channel.readInbound(as: FrameBatch.self) == FrameBatch(Self.samples), "one read, one batch")
        #expect(try channel.readInbound(as: FrameBatch.self) == nil)

        // Byte by byte: each frame comes alone, in the read of its last byte; the other reads pass nothing on.
        let all = Self.bytes(Self.samples)
        #expect(try Self.batches(of: all, inReadsOf: 1, into: channel) == Self.samples.map { FrameBatch([$0]) })

        // Split inside the third frame: two reads, each with the frames it completed.
        let cut = Self.samples[0...1].reduce(0) { $0 + $1.wireSize } + 3
        try channel.writeInbound(all.getSlice(at: 0, length: cut)!)
        try channel.writeInbound(all.getSlice(at: cut, length: all.readableBytes - cut)!)
        #expect(try channel.readInbound(as: FrameBatch.self) == FrameBatch(Array(Self.samples[0...1])))
        #expect(try channel.readInbound(as: FrameBatch.self) == FrameBatch(Array(Self.samples[2...])))
        #expect(try channel.finish().isClean)
    }

    @Test("a large frame arriving over many reads comes whole, and the frames behind it in its last read come with it")
    func batchLargeFrame() throws {
        let channel = EmbeddedChannel(handler: FrameBatchDecoder())
        let large = Frame.message(MessageFrame(header: MessageHeader(typeName: "t", id: MessageID(1)), payload: ByteBuffer(repeating: 0x41, count: 100_000)))
        let batches = try Self.batches(of: Self.bytes([large, .ping(1), .pong(2)]), inReadsOf: 999, into: channel)
        #expect(batches == [FrameBatch([large, .ping(1), .pong(2)])], "\(batches.map(\.frames.count))")
        #expect(try channel.finish().isClean)
    }

    @Test("reads in buffers with room to spare: a frame completed across them is right, and the frames handed on earlier are not touched")
    func batchSpareRoom() throws {
        let channel = EmbeddedChannel(handler: FrameBatchDecoder())
        let all = Self.bytes(Self.samples)
        let cut = Self.samples[0].wireSize + 7
        var first = ByteBuffer()
        first.reserveCapacity(4096)
        first.writeImmutableBuffer(all.getSlice(at: 0, length: cut)!)
        try channel.writeInbound(first)
        let early = try #require(try channel.readInbound(as: FrameBatch.self))
        var second = ByteBuffer()
        second.reserveCapacity(4096)
        second.writeImmutableBuffer(all.getSlice(at: cut, length: all.readableBytes - cut)!)
        try channel.writeInbound(second)
        #expect(try channel.readInbound(as: FrameBatch.self) == FrameBatch(Array(Self.samples[1...])))
        #expect(early == FrameBatch([Self.samples[0]]), "a frame handed on before was changed by a later read")
    }

    @Test("a frame above the whole-room size arrives whole over 64 KiB reads, with the frames behind it")
    func batchLargerThanWholeRoom() throws {
        let channel = EmbeddedChannel(handler: FrameBatchDecoder(maximumBodySize: 8 << 20))
        let payload = ByteBuffer(bytes: (0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        let large = Frame.message(MessageFrame(header: MessageHeader(typeName: "t", id: MessageID(1)), payload: payload))
        let batches = try Self.batches(of: Self.bytes([.ping(1), large, .pong(2)]), inReadsOf: 65_536, into: channel)
        #expect(batches.flatMap(\.frames) == [.ping(1), large, .pong(2)])
        #expect(try channel.finish().isClean)
    }

    @Test("a frame that straddles two reads is refused as soon as its length is known to be too large; a good one before bad bytes still passes")
    func straddlingMalformed() throws {
        let channel = EmbeddedChannel(handler: FrameBatchDecoder(maximumBodySize: 1024))
        try channel.writeInbound(ByteBuffer(bytes: [207, 0x01]))
        #expect(throws: WireError.frameTooLarge(length: 1025, maximum: 1024)) {
            try channel.writeInbound(ByteBuffer(bytes: [0x04, 0, 0, 0x10]))
        }
        #expect(try channel.readInbound(as: FrameBatch.self) == nil)

        // The straddling frame is fine and the bytes behind it are not: it passes on, then the error.
        let wrongStart = EmbeddedChannel(handler: FrameBatchDecoder())
        try wrongStart.writeInbound(Self.bytes([.ping(1)]).getSlice(at: 0, length: 10)!)
        var tail = Self.bytes([.ping(1)]).getSlice(at: 10, length: 4)!
        tail.writeString("GET")
        #expect(throws: WireError.unexpectedStartByte(0x47)) { try wrongStart.writeInbound(tail) }
        #expect(try wrongStart.readInbound(as: FrameBatch.self) == FrameBatch([.ping(1)]))
        #expect(try wrongStart.readInbound(as: FrameBatch.self) == nil)

        let shortHeader = EmbeddedChannel(handler: FrameBatchDecoder())
        try shortHeader.writeInbound(ByteBuffer(bytes: [207, 1]))
        #expect(throws: WireError.truncatedFrame(expected: 5, received: 2)) { try shortHeader.finish() }
    }

    @Test("a malformed frame ends decoding: the frames before it pass on, then the error, and later bytes are dropped")
    func batchThenError() throws {
        let channel = EmbeddedChannel(handler: FrameBatchDecoder())
        var bytes = Self.bytes(Array(Self.samples[0...1]))
        bytes.writeString("GET / HTTP/1.1\r\n")
        #expect(throws: WireError.unexpectedStartByte(0x47)) { try channel.writeInbound(bytes) }
        #expect(try channel.readInbound(as: FrameBatch.self) == FrameBatch(Array(Self.samples[0...1])))
        try channel.writeInbound(Self.bytes([.ping(1)]))
        #expect(try channel.readInbound(as: FrameBatch.self) == nil, "nothing after a malformed frame")

        let oversized = EmbeddedChannel(handler: FrameBatchDecoder(maximumBodySize: 1024))
        var announced = ByteBuffer(bytes: [207])
        announced.writeInteger(UInt32(1025), endianness: .little)
        #expect(throws: WireError.frameTooLarge(length: 1025, maximum: 1024)) { try oversized.writeInbound(announced) }
    }

    @Test("input that ends inside a frame is reported as a truncated frame, at the end of input or of the connection")
    func batchTruncated() throws {
        let unfinished = Self.bytes([.ping(7)]).getSlice(at: 0, length: 10)!
        let halfClosed = EmbeddedChannel(handler: FrameBatchDecoder())
        try halfClosed.writeInbound(Self.bytes([.ping(1)]))
        try halfClosed.writeInbound(unfinished)
        halfClosed.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        #expect(throws: WireError.truncatedFrame(expected: 14, received: 10)) { try halfClosed.throwIfErrorCaught() }
        #expect(try halfClosed.readInbound(as: FrameBatch.self) == FrameBatch([.ping(1)]))

        let closed = EmbeddedChannel(handler: FrameBatchDecoder())
        try closed.writeInbound(unfinished)
        #expect(throws: WireError.truncatedFrame(expected: 14, received: 10)) { try closed.finish() }

        let whole = EmbeddedChannel(handler: FrameBatchDecoder())
        try whole.writeInbound(Self.bytes([.ping(1)]))
        guard case .leftOvers(inbound: let left, outbound: _, pendingOutbound: _) = try whole.finish() else {
            Issue.record("the whole frame was lost")
            return
        }
        #expect(left.count == 1, "a stream that ends between frames is not truncated")
    }

    @Test("the byte layout of a message frame is the one docs/protocol.md describes")
    func messageLayout() {
        var buffer = ByteBuffer()
        let header = MessageHeader(typeName: "t.Ping", id: MessageID(1), inReplyTo: nil, flags: .expectsReply)
        Frame.message(MessageFrame(header: header, payload: Self.buffer("{}"))).write(to: &buffer)
        let hex = buffer.readableBytesView.map { String(format: "%02x", $0) }.joined(separator: " ")
        #expect(
            hex
                == "cf 1c 00 00 00 10 01 01 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 06 00 74 2e 50 69 6e 67 7b 7d"
        )
    }

    @Test("a message frame written whole is byte for byte its header and payload written apart (the large-payload path), after what the buffer held", arguments: [
        MessageHeader(typeName: "t", id: MessageID(1)),
        MessageHeader(typeName: "app.Événement/ünïcode", id: MessageID(.max), inReplyTo: MessageID(0x0102_0304_0506_0708), flags: .expectsReply),
        MessageHeader(typeName: String(repeating: "x", count: 300), id: MessageID(77), inReplyTo: MessageID(5)),
    ])
    func wholeMessageWrite(header: MessageHeader) {
        var source = Self.buffer("skipped{\"payload\":[1,2,3]}")
        source.moveReaderIndex(forwardBy: 7)  // a slice that does not start at its storage's beginning
        for payload in [source, ByteBuffer()] {
            let frame = Frame.message(MessageFrame(header: header, payload: payload))
            var whole = Self.buffer("before")
            frame.write(to: &whole)
            var apart = Self.buffer("before")
            frame.writePrefixAndHeader(to: &apart)
            apart.writeImmutableBuffer(payload)
            #expect(whole == apart)
            #expect(whole.readableBytes == 6 + frame.wireSize)
        }
    }

    @Test("a length above the maximum is refused before the body is buffered")
    func oversized() {
        var decoder = FrameDecoder(maximumBodySize: 1024)
        var buffer = ByteBuffer(bytes: [207])
        buffer.writeInteger(UInt32(1025), endianness: .little)
        #expect(throws: WireError.frameTooLarge(length: 1025, maximum: 1024)) { try decoder.decode(buffer: &buffer) }
    }

    @Test("a wrong start byte is named in the error")
    func wrongStartByte() {
        var decoder = FrameDecoder()
        var buffer = ByteBuffer(string: "GET / HTTP/1.1\r\n")
        #expect(throws: WireError.unexpectedStartByte(0x47)) { try decoder.decode(buffer: &buffer) }
        #expect(WireError.unexpectedStartByte(0x47).description.contains("0x47"))
    }

    @Test("a connection that ends inside a frame reports a truncated frame")
    func truncated() throws {
        var decoder = FrameDecoder()
        var buffer = ByteBuffer(bytes: [207])
        buffer.writeInteger(UInt32(100), endianness: .little)
        buffer.writeRepeatingByte(0x10, count: 10)
        #expect(try decoder.decode(buffer: &buffer) == nil)
        #expect(throws: WireError.truncatedFrame(expected: 105, received: 15)) {
            try decoder.decodeLast(buffer: &buffer, seenEOF: true)
        }
    }

    @Test("malformed message headers are refused with a reason", arguments: [
        ([0x10, 0x00], "fixed header"),  // too short
        ([0x10, 0x00] + [UInt8](repeating: 0, count: 16) + [0x00, 0x00], "type name length"),  // zero-length name
        ([0x10, 0x00, 1, 0, 0, 0, 0, 0, 0, 0] + [UInt8](repeating: 0, count: 8) + [0x09, 0x00, 0x41], "runs past"),
        ([0x10, 0x00] + [UInt8](repeating: 0, count: 16) + [0x01, 0x00, 0x41], "id 0"),
        ([0x77], "unknown frame kind"),
        ([0x20, 1, 2], "exactly 9 bytes"),
        ([0x03] + [UInt8](repeating: 0, count: 16), "16-byte tag"),  // sealed: a tag but no inner kind byte
    ] as [([UInt8], String)])
    func malformed(body: [UInt8], expected: String) {
        var decoder = FrameDecoder()
        var buffer = ByteBuffer(bytes: [207])
        buffer.writeInteger(UInt32(body.count), endianness: .little)
        buffer.writeBytes(body)
        do {
            _ = try decoder.decode(buffer: &buffer)
            Issue.record("decoded a malformed frame")
        } catch {
            #expect(String(describing: error).contains(expected), "\(error)")
        }
    }
}
