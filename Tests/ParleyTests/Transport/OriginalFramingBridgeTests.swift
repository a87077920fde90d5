import Foundation
import Logging
import NIOCore
import NIOEmbedded
import NIOPosix
@testable import Parley
import ParleyTestSupport
import ParleyWire
import Synchronization
import Testing

@Suite("The original framing bridge on an EmbeddedChannel")
struct OriginalFramingBridgeTests {
    static func bridge() throws -> (EmbeddedChannel, LogCapture) {
        let logs = LogCapture()
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(
            OriginalFramingBridge(translator: VerbatimTranslator(), logger: logs.logger, logThrottle: LogThrottle())
        )
        return (channel, logs)
    }

    @Test("the bridge writes the app's hello before its first frame, numbers its messages, and drops what it cannot read")
    func bridgeInbound() throws {
        let (channel, logs) = try Self.bridge()
        try channel.writeInbound(ByteBuffer(string: "!not for the translator"))
        try channel.writeInbound(ByteBuffer(string: #"{"n":1}"#))
        try channel.writeInbound(ByteBuffer(string: #"{"n":2}"#))
        var frames = try channel.readFrames()[...]
        guard case .hello(let helloFrame)? = frames.popFirst() else {
            Issue.record("no hello first")
            return
        }
        let hello = try JSONDecoder().decode(Hello.self, from: Data(helloFrame.body.readableBytesView))
        #expect(hello.capabilities == [OriginalFraming.capability] && hello.accepts == [VerbatimTranslator.outbound])
        #expect(UUID(uuidString: hello.peerID) != nil && hello.auth == nil)
        for (expectedID, body) in [(1, #"{"n":1}"#), (2, #"{"n":2}"#)] {
            guard case .message(let message)? = frames.popFirst() else {
                Issue.record("message \(expectedID) missing")
                return
            }
            #expect(message.header.typeName == VerbatimTranslator.inbound && message.header.id == MessageID(UInt64(expectedID)))
            #expect(message.payload == ByteBuffer(string: body))
        }
        #expect(frames.isEmpty)
        #expect(logs.records(mentioning: "not understood").count == 1)
    }

    @Test("a large body is translated off the event loop; later frames, reads and the connection's end wait for it, in order")
    func bridgeOffloadsLargeBodies() async throws {
        let gate = Latch()
        let translator = GatedTranslator(gate: gate)
        let seen = Observed<[String]>([])
        let events = ReadEvents()
        let channel = NIOAsyncTestingChannel()
        try await channel.testingEventLoop.executeInContext {
            try channel.pipeline.syncOperations.addHandlers([
                events,
                OriginalFramingBridge(translator: translator, logger: LogCapture().logger, logThrottle: LogThrottle(), pool: .shared),
                FrameRecorder(seen: seen),
            ])
        }
        let large = ByteBuffer(repeating: UInt8(ascii: "x"), count: OriginalFramingBridge.offloadMinimum)
        try await channel.writeInbound(large)
        try await channel.writeInbound(ByteBuffer(string: "small"))
        channel.read()
        channel.pipeline.fireChannelInactive()
        // The loop is free while the large body is being read (the translator is held at its gate) ...
        try await channel.testingEventLoop.executeInContext {}
        _ = try await translator.started.wait(for: "the translation to start") { $0 ? true : nil }
        #expect(seen.value == ["hello"], "nothing after the large body goes up before it")
        #expect(events.reads.value == 0, "no more reading while a body is being translated")
        // ... and when it is done, everything follows in the order it came.
        gate.open()
        let all = try await seen.wait(for: "the frames and the end") { $0.count == 4 ? $0 : nil }
        #expect(all == ["hello", "message 1: \(large.readableBytes) bytes", "message 2: 5 bytes", "inactive"])
    }

    @Test("out of the bridge goes only what the app can read; a request it cannot receive is answered with unknown-type, and a read's end follows")
    func bridgeOutbound() throws {
        let (channel, _) = try Self.bridge()
        let events = ReadEvents()
        try channel.pipeline.syncOperations.addHandler(events)
        try channel.writeOutbound(FrameBatch([rawHello()]))
        try channel.writeOutbound(FrameBatch([Frame.ping(1)]))
        try channel.writeOutbound(FrameBatch([Frame.close(CloseFrame(code: .goingAway, message: "bye"))]))
        let restore = MessageHeader(typeName: VerbatimTranslator.outbound, id: MessageID(5))
        let other = MessageHeader(typeName: "test.Other", id: MessageID(6), flags: .expectsReply)
        try channel.writeOutbound(
            FrameBatch([
                Frame.message(MessageFrame(header: restore, payload: ByteBuffer(string: "{}"))),
                Frame.message(MessageFrame(header: other, payload: ByteBuffer(string: "{}"))),
            ]))
        #expect(try channel.readOutbound(as: ByteBuffer.self) == ByteBuffer(string: "{}"))
        #expect(try channel.readOutbound(as: ByteBuffer.self) == nil)
        guard case .errorReply(let reply)? = try channel.readFrames().first else {
            Issue.record("no error reply for the request the app cannot receive")
            return
        }
        #expect(reply.inReplyTo == MessageID(6) && reply.code == .unknownType)
        #expect(events.readEnds.value == 1, "the handlers above see the answer's read end")
    }
}


/// Translates like ``VerbatimTranslator``, but holds a large body at a gate (on the pool's thread) until the test
/// opens it.
private struct GatedTranslator: OriginalFramingTranslator {
    let gate: Latch
    let started = Observed(false)
    var accepts: [String] { [] }

    func message(fromFrameBody body: ByteBuffer) throws -> (typeName: String, payload: ByteBuffer) {
        if body.readableBytes >= OriginalFramingBridge.offloadMinimum {
            started.update { $0 = true }
            let done = DispatchSemaphore(value: 0)
            Task {
                try? await gate.wait()
                done.signal()
            }
            done.wait()
        }
        return (VerbatimTranslator.inbound, body)
    }

    func frameBody(forMessage typeName: String, payload: ByteBuffer) -> ByteBuffer? { nil }
}

/// Records what reaches the business end of a pipeline.
private final class FrameRecorder: ChannelInboundHandler, Sendable {
    typealias InboundIn = FrameBatch
    let seen: Observed<[String]>
    init(seen: Observed<[String]>) { self.seen = seen }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let entries = unwrapInboundIn(data).frames.map { frame in
            switch frame {
            case .hello: "hello"
            case .message(let message): "message \(message.header.id): \(message.payload.readableBytes) bytes"
            default: "other"
            }
        }
        seen.update { $0 += entries }
    }

    func channelInactive(context: ChannelHandlerContext) { seen.update { $0.append("inactive") } }
}

/// Counts, where it stands in the pipeline, the reads asked for on their way down and the read ends on their way up.
private final class ReadEvents: ChannelDuplexHandler, Sendable {
    typealias InboundIn = Any
    typealias OutboundIn = Any
    let reads = Observed(0)
    let readEnds = Observed(0)

    func read(context: ChannelHandlerContext) {
        reads.update { $0 += 1 }
        context.read()
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        readEnds.update { $0 += 1 }
        context.fireChannelReadComplete()
    }
}
