import Foundation
import Logging
import NIOCore
import NIOEmbedded
@testable import Parley
import ParleyTestSupport
import ParleyWire
import Synchronization
import Testing

/// The transport's channel handlers on an `EmbeddedChannel`: no sockets, time moved by hand.
@Suite("Pipeline handlers on an EmbeddedChannel")
struct PipelineHandlerTests {
    static func originalFrame(_ json: String) -> ByteBuffer {
        var buffer = ByteBuffer()
        OriginalFrameEncoder.write(ByteBuffer(string: json), to: &buffer)
        return buffer
    }

    final class Chosen: Sendable {
        let framings = Mutex<[Framing]>([])
        func withLockedValue<T>(_ body: ([Framing]) -> T) -> T { framings.withLock { body($0) } }
    }

    /// A channel whose sniffer installs the framing it is told to and records which one that was.
    static func sniffing(refuse: (any Error)? = nil) throws -> (EmbeddedChannel, Chosen) {
        let chosen = Chosen()
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(
            FramingSniffer { framing, context in
                chosen.framings.withLock { $0.append(framing) }
                if let refuse { throw refuse }
                let handler: any ChannelHandler =
                    framing == .parley
                    ? ByteToMessageHandler(FrameDecoder()) : ByteToMessageHandler(OriginalFrameDecoder())
                try context.pipeline.syncOperations.addHandler(handler, position: .after(context.handler))
            }
        )
        return (channel, chosen)
    }

    @Test("the sniffer installs the framing the first byte names, hands it every byte, and leaves the pipeline")
    func sniffer() throws {
        let (parley, parleyChosen) = try Self.sniffing()
        var hello = ByteBuffer()
        rawHello().write(to: &hello)
        // The first read holds one byte only: the rest of the frame still reaches the installed decoder.
        try parley.writeInbound(hello.readSlice(length: 1)!)
        try parley.writeInbound(hello)
        #expect(parleyChosen.withLockedValue { $0 } == [Framing.parley])
        guard case .hello? = try parley.readInbound(as: Frame.self) else {
            Issue.record("the hello did not come through")
            return
        }
        #expect(throws: (any Error).self) { try parley.pipeline.syncOperations.handler(type: FramingSniffer.self) }

        let (original, originalChosen) = try Self.sniffing()
        try original.writeInbound(Self.originalFrame(#"{"a":1}"#))
        #expect(originalChosen.withLockedValue { $0 } == [Framing.original])
        #expect(try original.readInbound(as: ByteBuffer.self) == ByteBuffer(string: #"{"a":1}"#))
    }

    @Test("a refused framing raises its error once; later bytes and any frame written before a framing are dropped")
    func snifferRefuses() throws {
        let (channel, chosen) = try Self.sniffing(refuse: HandshakeError.originalFramingNeedsSecret)
        // Nothing can be said before the framing is known: a goodbye written now is dropped, not sent as a Frame.
        try channel.writeOutbound(Frame.close(CloseFrame(code: .goingAway, message: "bye")))
        #expect(try channel.readOutbound(as: ByteBuffer.self) == nil)
        #expect(throws: HandshakeError.originalFramingNeedsSecret) { try channel.writeInbound(Self.originalFrame("{}")) }
        try channel.writeInbound(Self.originalFrame("{}"))
        #expect(try channel.readInbound(as: ByteBuffer.self) == nil)
        #expect(chosen.withLockedValue { $0 } == [Framing.original])
    }

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
        guard case .hello(let helloFrame)? = try channel.readInbound(as: Frame.self) else {
            Issue.record("no hello first")
            return
        }
        let hello = try JSONDecoder().decode(Hello.self, from: Data(helloFrame.body.readableBytesView))
        #expect(hello.capabilities == [OriginalFraming.capability] && hello.accepts == [VerbatimTranslator.outbound])
        #expect(UUID(uuidString: hello.peerID) != nil && hello.auth == nil)
        for (expectedID, body) in [(1, #"{"n":1}"#), (2, #"{"n":2}"#)] {
            guard case .message(let message)? = try channel.readInbound(as: Frame.self) else {
                Issue.record("message \(expectedID) missing")
                return
            }
            #expect(message.header.typeName == VerbatimTranslator.inbound && message.header.id == MessageID(UInt64(expectedID)))
            #expect(message.payload == ByteBuffer(string: body))
        }
        #expect(try channel.readInbound(as: Frame.self) == nil)
        #expect(logs.records(mentioning: "not understood").count == 1)
    }

    @Test("out of the bridge goes only what the app can read; a request it cannot receive is answered with unknown-type")
    func bridgeOutbound() throws {
        let (channel, _) = try Self.bridge()
        try channel.writeOutbound(rawHello())
        try channel.writeOutbound(Frame.ping(1))
        try channel.writeOutbound(Frame.close(CloseFrame(code: .goingAway, message: "bye")))
        let restore = MessageHeader(typeName: VerbatimTranslator.outbound, id: MessageID(5))
        try channel.writeOutbound(Frame.message(MessageFrame(header: restore, payload: ByteBuffer(string: "{}"))))
        let other = MessageHeader(typeName: "test.Other", id: MessageID(6), flags: .expectsReply)
        try channel.writeOutbound(Frame.message(MessageFrame(header: other, payload: ByteBuffer(string: "{}"))))
        #expect(try channel.readOutbound(as: ByteBuffer.self) == ByteBuffer(string: "{}"))
        #expect(try channel.readOutbound(as: ByteBuffer.self) == nil)
        guard case .errorReply(let reply)? = try channel.readInbound(as: Frame.self) else {
            Issue.record("no error reply for the request the app cannot receive")
            return
        }
        #expect(reply.inReplyTo == MessageID(6) && reply.code == .unknownType)
    }

    @Test("the handshake deadline starts with the first byte on an accepted connection, and a hello in time disarms it")
    func handshakeDeadline() throws {
        let late = EmbeddedChannel()
        try late.pipeline.syncOperations.addHandler(HandshakeDeadlineHandler(timeout: .seconds(5), startsWithFirstByte: true))
        try late.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        // Silence is not a handshake that is late: the clock has not started.
        late.embeddedEventLoop.advanceTime(by: .seconds(60))
        try late.throwIfErrorCaught()
        late.pipeline.fireUserInboundEventTriggered(ReadActivityHandler.FirstBytes())
        late.embeddedEventLoop.advanceTime(by: .milliseconds(4999))
        try late.throwIfErrorCaught()
        late.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        #expect(throws: HandshakeError.timedOut(seconds: 5)) { try late.throwIfErrorCaught() }

        let dialled = EmbeddedChannel()
        try dialled.pipeline.syncOperations.addHandler(HandshakeDeadlineHandler(timeout: .seconds(5), frames: 2, startsWithFirstByte: false))
        try dialled.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        try dialled.writeInbound(rawHello())
        dialled.embeddedEventLoop.advanceTime(by: .seconds(4))
        try dialled.writeInbound(Frame.auth(ByteBuffer(string: "proof")))
        dialled.embeddedEventLoop.advanceTime(by: .seconds(60))
        try dialled.throwIfErrorCaught()
        // Both frames passed on, and the handler left the pipeline once the deadline was met.
        #expect(try dialled.readInbound(as: Frame.self) != nil && dialled.readInbound(as: Frame.self) != nil)
        #expect(throws: (any Error).self) { try dialled.pipeline.syncOperations.handler(type: HandshakeDeadlineHandler.self) }
    }

    @Test("a refused Parley peer is told why; an app in the original framing is closed without a byte; silence is closed at the first-byte timeout")
    func refusal() throws {
        let close = CloseFrame(code: .tooManyConnections, message: "too many connections")
        let parley = EmbeddedChannel()
        try parley.pipeline.syncOperations.addHandler(RefusalHandler(closeFrame: close, firstByteTimeout: .seconds(5)))
        try parley.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        var hello = ByteBuffer()
        rawHello().write(to: &hello)
        try parley.writeInbound(hello)
        var written = try #require(try parley.readOutbound(as: ByteBuffer.self))
        var decoder = FrameDecoder()
        #expect(try decoder.decode(buffer: &written) == .close(close))

        let original = EmbeddedChannel()
        try original.pipeline.syncOperations.addHandler(RefusalHandler(closeFrame: close, firstByteTimeout: .seconds(5)))
        try original.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        try original.writeInbound(Self.originalFrame("{}"))
        #expect(try original.readOutbound(as: ByteBuffer.self) == nil)
        #expect(!original.isActive)

        let silent = EmbeddedChannel()
        try silent.pipeline.syncOperations.addHandler(RefusalHandler(closeFrame: close, firstByteTimeout: .seconds(5)))
        try silent.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        silent.embeddedEventLoop.advanceTime(by: .seconds(5))
        #expect(!silent.isActive, "a refused connection that never speaks is closed at the first-byte timeout")
    }
}
