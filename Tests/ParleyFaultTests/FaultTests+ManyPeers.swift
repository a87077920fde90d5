import Foundation
import NIOCore
import Parley
import ParleyControl
import ParleyTestSupport
import ParleyWire
import Synchronization
import Testing

extension FaultTests {
    static let senderCount = ProcessInfo.processInfo.environment["FAULT_SENDERS"].flatMap { Int($0) } ?? 200
    static let messagesPerSender = ProcessInfo.processInfo.environment["FAULT_MESSAGES"].flatMap { Int($0) } ?? 1000
    /// Of the senders, how many are transceivers (the rest speak the protocol by hand).
    static let transceiverSenders = ProcessInfo.processInfo.environment["FAULT_TRANSCEIVERS"].flatMap { Int($0) } ?? 20
    static let sequenceType = "load.Sequence"

    /// The receiver is parleyd forwarding to one local subscriber rather than a single Transceiver: parleyd is what
    /// hundreds of LAN peers connect to, so this loads its accept path, one handler sequence per connection, its
    /// routing and the fan-in of 200 connections into one control-socket client (with backpressure).
    ///
    /// The test process must not be the bottleneck, or it would measure itself: 200 transceivers queueing 200 000
    /// messages in one debug-built process keep its two event-loop threads writing for many seconds. So 20 senders
    /// are transceivers (the library's sending path) and 180 are minimal peers written by hand (docs/protocol.md
    /// §13: a hello without `heartbeat`, then their 1 000 message frames pre-encoded in one write), which cost the
    /// test process almost nothing. parleyd runs with its default limits (the rate limit included: a burst of
    /// 1 000 frames is within its 2 000) except the per-address one, as every sender comes from 127.0.0.1.
    @Test("200 peers each send 1 000 messages to parleyd, which forwards them to a local subscriber: all 200 000 arrive, in order per peer")
    func manyPeers() async throws {
        let daemon = try await ParleydProcess.start(name: "faultd", arguments: ["--max-connections-per-address", "256"])
        let total = Self.senderCount * Self.messagesPerSender
        let tracker = DeliveryTracker(expecting: total)
        let subscriber = dialer("subscriber")
        subscriber.receiveUnhandled { message, _ in tracker.record(message) }
        // Should the subscriber lose parleyd, the report says why: its connection is where every message passes.
        let subscriberEvents = subscriber.peerEvents
        let subscriberLosses = Task {
            var losses: [String] = []
            for await case .disconnected(let peer, let reason) in subscriberEvents { losses.append("\(peer.name): \(reason)") }
            return losses
        }
        let transceivers = (0..<min(Self.transceiverSenders, Self.senderCount)).map { dialer("sender-\($0)") }
        let rawCount = Self.senderCount - transceivers.count

        try await withRunning([subscriber] + transceivers) {
            let parleyd = try await subscriber.connect(toUnixSocket: daemon.controlSocket)
            _ = try await subscriber.request(Control.Subscribe(types: [Self.sequenceType]), from: parleyd, expecting: Control.OK.self)
            let connectStarted = ContinuousClock.now
            for transceiver in transceivers { _ = try await transceiver.connect(to: daemon.endpoint) }
            let raw = try await withThrowingTaskGroup(of: (id: String, connection: RawConnection, bytes: [UInt8]).self) { group in
                for index in 0..<rawCount {
                    group.addTask {
                        let id = UUID().uuidString.lowercased()
                        // A peer says hello as soon as it is connected (as every Parley peer does): a burst of
                        // connections that all stay silent is the silent flood the pending pool is there to stop.
                        let connection = try await RawConnection.open(port: daemon.port)
                        try await connection.write(Self.rawHello(id: id, name: "raw-\(index)"))
                        return (id, connection, Self.rawSenderMessages())
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let connectTime = ContinuousClock.now - connectStarted
            let before = try daemon.memory()

            let started = ContinuousClock.now
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (_, connection, bytes) in raw {
                    group.addTask { try await connection.write(bytes) }
                }
                for transceiver in transceivers {
                    group.addTask {
                        for sequence in 0..<Self.messagesPerSender {
                            try await transceiver.sendRaw(typeName: Self.sequenceType, payload: ByteBuffer(string: String(sequence)), to: parleyd.id)
                        }
                    }
                }
                try await group.waitForAll()
            }
            let queued = ContinuousClock.now - started
            // The last delivery opens the latch; on a timeout the report below says how many arrived.
            _ = try? await withDeadline(.seconds(40), what: "all \(total) messages") { try await tracker.allDelivered.wait() }
            let result = tracker.snapshot
            let elapsed = (result.lastDelivery ?? .now) - started
            let after = try daemon.memory()
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18

            report("many peers: \(Self.senderCount) peers (\(transceivers.count) transceivers, \(rawCount) hand-written) connected in \(Latencies.ms(connectTime)); parleyd before sending: \(before)")
            report("many peers: delivered \(result.delivered) of \(total), lost \(total - result.delivered), out of order \(result.outOfOrder), unparsable \(result.unparsable)")
            report("many peers: written by the senders after \(Latencies.ms(queued)); last delivered after \(String(format: "%.2f s", seconds)) = \(Int(Double(result.delivered) / seconds)) msgs/s")
            report("many peers: parleyd (the receiver) \(after); test process \(try ProcessMemory.ofThisProcess())")

            #expect(result.delivered == total, "lost \(total - result.delivered) messages; parleyd's log ends: \(daemon.log.suffix(3000))")
            #expect(result.outOfOrder == 0 && result.unparsable == 0)
            let senderIDs = transceivers.compactMap { $0.localPeerID?.rawValue } + raw.map(\.id)
            let complete = senderIDs.filter { result.next[$0] == Self.messagesPerSender }
            if complete.count != Self.senderCount {
                // Where the missing messages stopped: parleyd's count of what it read from each incomplete sender.
                let listed = try? await subscriber.request(Control.Peers(), from: parleyd, expecting: Control.PeerList.self)
                let counts = Dictionary((listed?.peers ?? []).map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
                let transceiverIDs = Set(transceivers.compactMap { $0.localPeerID?.rawValue })
                let incomplete = senderIDs.filter { result.next[$0] != Self.messagesPerSender }.map { id in
                    "\(transceiverIDs.contains(id) ? "transceiver" : "hand-written") \(id.prefix(8)): delivered \(result.next[id] ?? 0), "
                        + (counts[id].map { "parleyd read \($0.messagesIn)" } ?? "not connected to parleyd")
                }
                Issue.record("only \(complete.count) senders had all their messages delivered: \(incomplete.prefix(10))")
            }
            let warnings = daemon.logLines(containing: " warning ")
            #expect(warnings.isEmpty, "parleyd warned: \(warnings.prefix(5).joined(separator: "\n"))")
            for (_, connection, _) in raw { connection.close() }
        }
        #expect(try await daemon.stop() == 0)
        let losses = await subscriberLosses.value
        #expect(losses.allSatisfy { $0.contains("shutting down") }, "the subscriber lost parleyd: \(losses)")
    }

    /// What a hand-written peer sends: its hello (no `heartbeat`, so parleyd neither pings it nor times it out),
    /// then `messagesPerSender` one-way messages numbered from 1 whose payload is the sequence number as text.
    static func rawHello(id: String, name: String) -> [UInt8] {
        let hello = #"{"peerID":"\#(id)","name":"\#(name)","capabilities":[],"accepts":[]}"#
        return frameBytes(.hello(HelloFrame(minimumVersion: 1, maximumVersion: 1, body: ByteBuffer(string: hello))))
    }

    static func rawSenderMessages() -> [UInt8] {
        var buffer = ByteBuffer()
        for sequence in 0..<messagesPerSender {
            let header = MessageHeader(typeName: sequenceType, id: MessageID(UInt64(sequence + 1)))
            Frame.message(MessageFrame(header: header, payload: ByteBuffer(string: String(sequence)))).write(to: &buffer)
        }
        return Array(buffer.readableBytesView)
    }
}

/// What the subscriber received: `@<sender id>/load.Sequence` messages whose payload is the sender's sequence
/// number as text. Its handler runs for one message at a time (one connection to parleyd).
final class DeliveryTracker: Sendable {
    struct State {
        /// The sequence number expected next from each sender.
        var next: [String: Int] = [:]
        var delivered = 0
        var outOfOrder = 0
        var unparsable = 0
        var lastDelivery: ContinuousClock.Instant?
    }

    private let state = Mutex(State())
    private let expected: Int
    /// Opened by the delivery that makes `expected`: one wake-up, not one per message.
    let allDelivered = Latch()

    init(expecting expected: Int) { self.expected = expected }

    var snapshot: State { state.withLock { $0 } }

    func record(_ message: InboundMessage) {
        guard let routed = RoutedType(parsing: message.typeName), routed.typeName == FaultTests.sequenceType,
            let sequence = Int(String(buffer: message.payload))
        else {
            state.withLock { $0.unparsable += 1 }
            return
        }
        let complete = state.withLock { state in
            if sequence != state.next[routed.target, default: 0] { state.outOfOrder += 1 }
            state.next[routed.target] = sequence + 1
            state.delivered += 1
            state.lastDelivery = .now
            return state.delivered == expected
        }
        if complete { allDelivered.open() }
    }
}
