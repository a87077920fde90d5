import Foundation
import NIOCore
import NIOPosix
@testable import Parley
import ParleyTestSupport
import ParleyWire
import Synchronization
import Testing

/// Two authenticated transceivers talking through a relay that reads, alters and replays what passes: a third
/// party on the path can neither read the messages nor change them undetected.
@Suite("Encryption through a relay", .timeLimit(.minutes(2)))
struct EncryptionTests {
    /// A server and a client sharing `secret` (or both open); the client dials the server through a relay.
    /// Heartbeats are slowed right down so that the only frames after the handshake are the test's own.
    static func withRelay(
        secret: SharedSecret?,
        tamper: @escaping FrameRelay.Tamper = { _, _, frame in [frame] },
        _ body: (_ server: Transceiver, _ client: Transceiver, _ peer: Peer, _ relay: FrameRelay, _ serverLogs: LogCapture) async throws -> Void
    ) async throws {
        let serverLogs = LogCapture()
        // Their own event loop for the two transceivers and the relay: on the shared loops, a test running at the
        // same time that keeps a loop busy (large frames decoded there) held back this handshake past its 5 s
        // deadline in full runs on two cores, though never when this suite ran alone.
        let loop = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { loop.shutdownGracefully { _ in } }
        let settings: (inout TransceiverConfiguration) -> Void = {
            $0.sharedSecret = secret
            $0.heartbeatInterval = .seconds(3600)
            $0.eventLoopGroup = loop
        }
        let server = makeTransceiver("server", logs: serverLogs, adjust: settings)
        let client = makeTransceiver("client", listen: nil, adjust: settings)
        try await withRunning([server, client]) {
            let relay = try await FrameRelay.start(to: server.listeningPort!, group: loop, tamper: tamper)
            do {
                let peer = try await client.connect(to: Endpoint(host: "127.0.0.1", port: relay.port))
                try await body(server, client, peer, relay, serverLogs)
            } catch {
                await relay.stop()
                throw error
            }
            await relay.stop()
        }
    }

    /// Alters the first sealed frame on its way to the acceptor with `change`; passes everything else.
    static func firstSealedFrameToAcceptor(_ change: @escaping @Sendable ([UInt8]) -> [[UInt8]]) -> FrameRelay.Tamper {
        let done = Mutex(false)
        return { direction, _, frame in
            guard direction == .toAcceptor, frame.count > FrameLayout.prefixSize, frame[5] == FrameKind.sealed.rawValue,
                done.withLock({ done in defer { done = true }; return !done })
            else { return [frame] }
            return change(frame)
        }
    }

    static func occurs(_ needle: [UInt8], in haystack: [UInt8]) -> Bool {
        guard needle.count <= haystack.count else { return false }
        return (0...(haystack.count - needle.count)).contains { start in haystack[start..<(start + needle.count)].elementsEqual(needle) }
    }

    @Test("the relay reads a marker in a message only when the peers run open", arguments: [true, false])
    func confidentiality(encrypted: Bool) async throws {
        let marker = "PLAINTEXT-MARKER-\(UUID().uuidString)"
        try await Self.withRelay(secret: encrypted ? .generate() : nil) { server, client, peer, relay, _ in
            server.respond(to: Echo.self) { echo, _ in echo }
            let reply = try await client.request(Echo(text: marker), from: peer, expecting: Echo.self)
            #expect(reply.text == marker)
            let recorded = relay.recorded
            #expect(Self.occurs(Array(marker.utf8), in: recorded) == !encrypted)
            // The name of the message type travels inside the sealed frames too.
            #expect(Self.occurs(Array(Echo.messageType.utf8), in: recorded) == !encrypted)
            #expect(recorded.count > 200, "the relay recorded the exchange")
        }
    }

    @Test("a byte flipped in a sealed frame closes the connection as forged, and the message is not delivered")
    func alteredFrame() async throws {
        let tamper = Self.firstSealedFrameToAcceptor { frame in
            var altered = frame
            altered[FrameLayout.prefixSize + 4] ^= 0x01
            return [altered]
        }
        try await Self.withRelay(secret: .generate(), tamper: tamper) { server, client, peer, _, serverLogs in
            let handled = Counter()
            server.receive(Echo.self) { _, _ in handled.increment() }
            try await client.send(Echo(text: "altered on the way"), to: peer)
            #expect(await serverLogs.logged(mentioning: "frame failed authentication: altered or forged"))
            #expect(await eventually(peersOf: server) { $0.isEmpty })
            #expect(await eventually(peersOf: client) { $0.isEmpty })
            #expect(handled.count == 0)
        }
    }

    @Test("a replayed sealed frame is rejected: the message is handled once and the connection closes")
    func replayedFrame() async throws {
        let tamper = Self.firstSealedFrameToAcceptor { frame in [frame, frame] }
        try await Self.withRelay(secret: .generate(), tamper: tamper) { server, client, peer, _, serverLogs in
            let handled = Counter()
            server.receive(Echo.self) { _, _ in handled.increment() }
            try await client.send(Echo(text: "once"), to: peer)
            #expect(await serverLogs.logged(mentioning: "frame failed authentication"))
            #expect(await eventually(peersOf: server) { $0.isEmpty })
            #expect(await eventually(peersOf: client) { $0.isEmpty })
            #expect(handled.count == 1)
        }
    }
}
