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
                    ? FrameBatchDecoder() : ByteToMessageHandler(OriginalFrameDecoder())
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
        guard case .hello? = try parley.readFrames().first else {
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
        try channel.writeOutbound(FrameBatch([Frame.close(CloseFrame(code: .goingAway, message: "bye"))]))
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
        try dialled.writeFrames(rawHello())
        dialled.embeddedEventLoop.advanceTime(by: .seconds(4))
        try dialled.writeFrames(Frame.auth(ByteBuffer(string: "proof")))
        dialled.embeddedEventLoop.advanceTime(by: .seconds(60))
        try dialled.throwIfErrorCaught()
        // Both frames passed on, and the handler left the pipeline once the deadline was met.
        #expect(try dialled.readFrames().count == 2)
        #expect(throws: (any Error).self) { try dialled.pipeline.syncOperations.handler(type: HandshakeDeadlineHandler.self) }

        // Both handshake frames in one read meet the deadline as well.
        let together = EmbeddedChannel()
        try together.pipeline.syncOperations.addHandler(HandshakeDeadlineHandler(timeout: .seconds(5), frames: 2, startsWithFirstByte: false))
        try together.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        try together.writeFrames(rawHello(), Frame.auth(ByteBuffer(string: "proof")))
        together.embeddedEventLoop.advanceTime(by: .seconds(60))
        try together.throwIfErrorCaught()
        #expect(try together.readFrames().count == 2)
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

    static func connected(_ handlers: [any ChannelHandler]) throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandlers(handlers)
        try channel.connect(to: SocketAddress(ipAddress: "10.0.0.2", port: 7206)).wait()
        return channel
    }

    static func message(_ id: UInt64) -> Frame {
        .message(MessageFrame(header: MessageHeader(typeName: "test.Note", id: MessageID(id)), payload: ByteBuffer(string: "{}")))
    }

    /// A connected channel with the read activity, the frame decoder and heartbeats at `interval`/`timeout`, started
    /// as after a handshake.
    static func heartbeating(interval: TimeAmount, timeout: TimeAmount) throws -> (EmbeddedChannel, PeerConnection) {
        let channel = EmbeddedChannel()
        let activity = ReadActivity()
        let connection = PeerConnection(
            channel: channel, role: .dialer, sharedSecret: nil, requests: PendingRequests(),
            configuration: TransceiverConfiguration(name: "test")
        )
        try channel.pipeline.syncOperations.addHandlers([
            ReadActivityHandler(activity),
            FrameBatchDecoder(),
            HeartbeatHandler(interval: interval, timeout: timeout, activity: activity, connection: connection),
        ])
        try channel.connect(to: SocketAddress(ipAddress: "10.0.0.2", port: 7206)).wait()
        channel.pipeline.triggerUserOutboundEvent(HeartbeatHandler.Start(), promise: nil)
        return (channel, connection)
    }

    @Test("heartbeats: a ping every interval, pings answered, and silence past the timeout closes — any read resets it")
    func heartbeat() throws {
        let (channel, connection) = try Self.heartbeating(interval: .seconds(1), timeout: .seconds(3))
        func bytes(_ frame: Frame) -> ByteBuffer {
            var buffer = ByteBuffer()
            frame.write(to: &buffer)
            return buffer
        }
        /// What a socket channel with auto-read does after each read; an EmbeddedChannel does not. Without it the
        /// handler sees reading paused (our own backpressure) and, rightly, does not blame the peer.
        func readOn() { channel.pipeline.read() }

        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        #expect(try channel.readOutbound(as: FrameBatch.self) == FrameBatch([.ping(1)]))
        try channel.writeInbound(bytes(.ping(77)))
        readOn()
        #expect(try channel.readOutbound(as: FrameBatch.self) == FrameBatch([.pong(77)]))
        #expect(try channel.readFrames() == [], "a ping after the handshake is the heartbeat's own")
        // In one read with messages: the pings are answered (one flush), the messages pass on in order.
        var mixed = ByteBuffer()
        for frame in [Self.message(1), .ping(78), .pong(1), Self.message(2), .ping(79)] { frame.write(to: &mixed) }
        try channel.writeInbound(mixed)
        #expect(try channel.readOutbound(as: FrameBatch.self) == FrameBatch([.pong(78), .pong(79)]), "one write for the read's pings")
        #expect(try channel.readFrames() == [Self.message(1), Self.message(2)])

        // Bytes at 2.5 s move the deadline to 5.5 s: any read is life, even half a frame.
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1500))
        try channel.writeInbound(bytes(Self.message(1)).getSlice(at: 0, length: 3)!)
        readOn()
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(2999))
        #expect(channel.isActive)
        try channel.throwIfErrorCaught()
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        #expect(!channel.isActive)
        #expect(connection.endReason == .silent(.seconds(3)), "\(String(describing: connection.endReason))")
    }

    @Test("sending nonstop to a peer that only answers pings keeps it; one that does not answer is closed although we send")
    func heartbeatWhileSending() throws {
        for answers in [true, false] {
            let (channel, connection) = try Self.heartbeating(interval: .milliseconds(500), timeout: .milliseconds(2500))
            var pings = 0
            // Five seconds, twice the timeout, of a message every 5 ms from our side.
            for step in 1...1000 where channel.isActive {
                try channel.writeOutbound(FrameBatch([Self.message(UInt64(step))]))
                channel.embeddedEventLoop.advanceTime(by: .milliseconds(5))
                while let frame = try channel.readOutbound(as: FrameBatch.self)?.frames.first {
                    guard case .ping(let nonce) = frame else { continue }
                    pings += 1
                    if answers {
                        var pong = ByteBuffer()
                        Frame.pong(nonce).write(to: &pong)
                        try channel.writeInbound(pong)
                        channel.pipeline.read()
                    }
                }
            }
            if answers {
                #expect(channel.isActive, "\(String(describing: connection.endReason))")
                #expect(pings == 10, "a ping every interval although we were sending all the time")
            } else {
                #expect(!channel.isActive)
                #expect(connection.endReason == .silent(.milliseconds(2500)), "\(String(describing: connection.endReason))")
            }
        }
    }

    @Test("while we ourselves have stopped reading (backpressure), silence is not the peer's fault")
    func heartbeatPaused() throws {
        let channel = EmbeddedChannel()
        let activity = ReadActivity()
        let connection = PeerConnection(
            channel: channel, role: .dialer, sharedSecret: nil, requests: PendingRequests(),
            configuration: TransceiverConfiguration(name: "test")
        )
        try channel.pipeline.syncOperations.addHandler(
            HeartbeatHandler(interval: .seconds(1), timeout: .seconds(3), activity: activity, connection: connection)
        )
        try channel.connect(to: SocketAddress(ipAddress: "10.0.0.2", port: 7206)).wait()
        channel.pipeline.triggerUserOutboundEvent(HeartbeatHandler.Start(), promise: nil)
        channel.pipeline.fireChannelReadComplete()  // a read completed, and no new read was asked for
        channel.embeddedEventLoop.advanceTime(by: .seconds(30))
        #expect(channel.isActive && connection.endReason == nil)
    }

    @Test("a probe pings at once and closes a connection that answers nothing within its window; any answer keeps it")
    func probe() throws {
        func bytes(_ frame: Frame) -> ByteBuffer {
            var buffer = ByteBuffer()
            frame.write(to: &buffer)
            return buffer
        }
        // Live: the pong comes back within the window.
        let (live, liveConnection) = try Self.heartbeating(interval: .seconds(1), timeout: .seconds(30))
        live.pipeline.read()
        live.pipeline.triggerUserOutboundEvent(HeartbeatHandler.Probe(within: .seconds(1)), promise: nil)
        #expect(try live.readOutbound(as: FrameBatch.self) == FrameBatch([.ping(1)]))
        live.embeddedEventLoop.advanceTime(by: .milliseconds(300))
        try live.writeInbound(bytes(.pong(1)))
        live.pipeline.read()
        live.embeddedEventLoop.advanceTime(by: .seconds(2))
        #expect(live.isActive && liveConnection.endReason == nil)

        // Dead: nothing within the window, long before the 30 s heartbeat timeout.
        let (dead, deadConnection) = try Self.heartbeating(interval: .seconds(1), timeout: .seconds(30))
        dead.pipeline.read()
        dead.embeddedEventLoop.advanceTime(by: .milliseconds(100))  // the last read was before the probe
        dead.pipeline.triggerUserOutboundEvent(HeartbeatHandler.Probe(within: .seconds(1)), promise: nil)
        #expect(try dead.readOutbound(as: FrameBatch.self) == FrameBatch([.ping(1)]))
        dead.embeddedEventLoop.advanceTime(by: .milliseconds(999))
        #expect(dead.isActive)
        dead.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        #expect(!dead.isActive)
        guard case .silent? = deadConnection.endReason else {
            Issue.record("closed, but not as silent: \(String(describing: deadConnection.endReason))")
            return
        }
    }

    @Test("the idle timeout counts messages either way, not pings, and exempts nobody on TCP")
    func idle() throws {
        let channel = try Self.connected([IdleTimeoutHandler(timeout: .seconds(10))])
        channel.embeddedEventLoop.advanceTime(by: .seconds(6))
        try channel.writeOutbound(FrameBatch([Frame.ping(2), Self.message(1)]))  // a message we send counts
        channel.embeddedEventLoop.advanceTime(by: .seconds(6))
        try channel.writeFrames(Frame.ping(1))  // a ping does not
        channel.embeddedEventLoop.advanceTime(by: .seconds(3))
        try channel.throwIfErrorCaught()
        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        #expect(throws: ConnectionLimitExceeded.idle(timeout: .seconds(10))) { try channel.throwIfErrorCaught() }

        // A message received counts from the read it came in, and one written but not yet flushed does not.
        let reading = try Self.connected([IdleTimeoutHandler(timeout: .seconds(10))])
        reading.embeddedEventLoop.advanceTime(by: .seconds(6))
        try reading.writeFrames(Frame.pong(1), Self.message(2))
        reading.embeddedEventLoop.advanceTime(by: .seconds(6))
        reading.write(FrameBatch([Self.message(3)]), promise: nil)
        reading.embeddedEventLoop.advanceTime(by: .seconds(3))
        try reading.throwIfErrorCaught()
        reading.embeddedEventLoop.advanceTime(by: .seconds(1))
        #expect(throws: ConnectionLimitExceeded.idle(timeout: .seconds(10))) { try reading.throwIfErrorCaught() }
    }

    @Test("the rate limit admits the burst, refills at the rate on the loop's clock, and ends a flood once")
    func rateLimit() throws {
        let channel = try Self.connected([RateLimitHandler(limit: MessageRateLimit(perSecond: 2, burst: 3))])
        try channel.writeFrames(Self.message(1), Self.message(2))
        try channel.writeFrames(Self.message(3))
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(500))  // one token back
        // One read over the limit: the frame within it passes, the rest is dropped, and the connection ends.
        #expect(throws: ConnectionLimitExceeded.rate(MessageRateLimit(perSecond: 2, burst: 3))) {
            try channel.writeFrames(Self.message(4), Self.message(5), Self.message(6))
        }
        try channel.writeFrames(Self.message(7))  // dropped, not reported again
        try channel.throwIfErrorCaught()
        #expect(try channel.readFrames() == (1...4).map { Self.message(UInt64($0)) })

        // Over the limit at a read's first frame: nothing of it passes.
        let atOnce = try Self.connected([RateLimitHandler(limit: MessageRateLimit(perSecond: 1, burst: 1))])
        try atOnce.writeFrames(Self.message(1))
        #expect(throws: ConnectionLimitExceeded.rate(MessageRateLimit(perSecond: 1, burst: 1))) {
            try atOnce.writeFrames(Self.message(2), Self.message(3))
        }
        #expect(try atOnce.readFrames() == [Self.message(1)])

        // A steady peer at half the rate is never refused, however long it keeps going (a minute of loop time).
        let steady = try Self.connected([RateLimitHandler(limit: MessageRateLimit(perSecond: 10, burst: 5))])
        for id in 1...300 {
            try steady.writeFrames(Self.message(UInt64(id)))
            steady.embeddedEventLoop.advanceTime(by: .milliseconds(200))
        }
        try steady.throwIfErrorCaught()
        #expect(try steady.readFrames().count == 300 && steady.isActive)
    }

    @Test("a silence timer fires on the loop's clock, re-arms when activity moved, and stops when told there is nothing to watch")
    func silenceTimer() throws {
        let loop = EmbeddedEventLoop()
        var last: NIODeadline? = loop.now
        var fired: [TimeAmount] = []
        let timer = SilenceTimer(on: loop, timeout: .seconds(5), lastActivity: { last }) { fired.append($0) }
        timer.start()
        loop.advanceTime(by: .seconds(4))
        last = loop.now  // activity at 4 s: due at 9 s
        loop.advanceTime(by: .seconds(4))
        #expect(fired.isEmpty)
        loop.advanceTime(by: .seconds(1))
        #expect(fired == [.seconds(5)])

        var watched: NIODeadline? = loop.now
        var stopped: [TimeAmount] = []
        let ending = SilenceTimer(on: loop, timeout: .seconds(5), lastActivity: { watched }) { stopped.append($0) }
        ending.start()
        watched = nil
        loop.advanceTime(by: .seconds(60))
        #expect(stopped.isEmpty)
    }

    @Test("addresses print as people write them: IPv4 without ::ffff:, link-local IPv6 with its interface")
    func addresses() throws {
        #expect(PeerConnection.describe(try SocketAddress(ipAddress: "::ffff:10.0.0.2", port: 7206)) == "10.0.0.2:7206")
        #expect(PeerConnection.describe(try SocketAddress(ipAddress: "10.0.0.2", port: 7206)) == "10.0.0.2:7206")
        #expect(PeerConnection.describe(try SocketAddress(ipAddress: "2001:db8::1", port: 7206)) == "[2001:db8::1]:7206")
        var linkLocal = sockaddr_in6()
        linkLocal.sin6_family = sa_family_t(AF_INET6)
        linkLocal.sin6_port = UInt16(7206).bigEndian
        #expect(inet_pton(AF_INET6, "fe80::1", &linkLocal.sin6_addr) == 1)
        linkLocal.sin6_scope_id = if_nametoindex("lo")
        #expect(PeerConnection.describe(SocketAddress(linkLocal, host: "")) == "[fe80::1%lo]:7206")
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
