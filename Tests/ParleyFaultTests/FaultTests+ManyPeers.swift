import Foundation
import NIOCore
import Parley
import ParleyControl
import Synchronization
import Testing

extension FaultTests {
    static let senderCount = 200
    static let messagesPerSender = 1000
    static let sequenceType = "load.Sequence"

    /// The receiver is parleyd forwarding to one local subscriber rather than a single Transceiver: parleyd is what
    /// hundreds of LAN peers connect to, so this puts its accept path, its per-connection handlers, its routing and
    /// the fan-in of 200 connections into one control-socket client (with its backpressure) under load. The
    /// senders are 200 transceivers in this process sharing the event-loop group; parleyd runs with its default
    /// limits except the per-address one (every sender comes from 127.0.0.1).
    @Test("200 peers each send 1 000 messages to parleyd, which forwards them to a local subscriber: all 200 000 arrive, in order per peer")
    func manyPeers() async throws {
        let daemon = try await DaemonProcess(arguments: ["--max-connections-per-address", "256"])
        let tracker = DeliveryTracker()
        let subscriber = dialer("subscriber")
        subscriber.receiveUnhandled { message, _ in tracker.record(message) }
        let senders = (0..<Self.senderCount).map { dialer("sender-\($0)") }
        let total = Self.senderCount * Self.messagesPerSender

        try await withRunning([subscriber] + senders) {
            let parleyd = try await subscriber.connect(toUnixSocket: daemon.socket)
            _ = try await subscriber.request(Control.Subscribe(types: [Self.sequenceType]), from: parleyd, expecting: Control.OK.self)
            let connectStarted = ContinuousClock.now
            for batch in stride(from: 0, to: senders.count, by: 20) {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for sender in senders[batch..<min(batch + 20, senders.count)] {
                        group.addTask { _ = try await sender.connect(to: daemon.endpoint) }
                    }
                    try await group.waitForAll()
                }
            }
            let connectTime = ContinuousClock.now - connectStarted
            let before = try daemon.memory()

            let started = ContinuousClock.now
            try await withThrowingTaskGroup(of: Void.self) { group in
                for sender in senders {
                    group.addTask {
                        let daemonID = parleyd.id
                        for sequence in 0..<Self.messagesPerSender {
                            try await sender.sendRaw(typeName: Self.sequenceType, payload: ByteBuffer(string: String(sequence)), to: daemonID)
                        }
                    }
                }
                try await group.waitForAll()
            }
            let queued = ContinuousClock.now - started
            let deadline = ContinuousClock.now + .seconds(40)
            while tracker.snapshot.delivered < total, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            let result = tracker.snapshot
            let elapsed = (result.lastDelivery ?? .now) - started
            let after = try daemon.memory()
            let testProcess = try ProcessMemory.ofThisProcess()
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18

            report("many peers: \(Self.senderCount) peers connected in \(Latencies.ms(connectTime)); parleyd before sending: \(before)")
            report("many peers: delivered \(result.delivered) of \(total), lost \(total - result.delivered), out of order \(result.outOfOrder), unparsable \(result.unparsable)")
            report("many peers: all queued by the senders after \(Latencies.ms(queued)); last delivered after \(String(format: "%.2f s", seconds)) = \(Int(Double(result.delivered) / seconds)) msgs/s")
            report("many peers: parleyd (the receiver) \(after); test process (200 senders + subscriber) \(testProcess)")

            #expect(result.delivered == total, "lost \(total - result.delivered) messages")
            #expect(result.outOfOrder == 0 && result.unparsable == 0)
            let complete = Set(senders.compactMap { $0.localPeerID?.rawValue }).filter { result.next[$0] == Self.messagesPerSender }
            #expect(complete.count == Self.senderCount, "only \(complete.count) senders had all their messages delivered")
            #expect(daemon.logLines(containing: "unsubscribed").isEmpty, "parleyd dropped the subscriber as too slow")
            #expect(daemon.logLines(containing: "connection limit exceeded").isEmpty, "a sender hit a limit")
        }
        #expect(try await daemon.stop() == 0)
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

    var snapshot: State { state.withLock { $0 } }

    func record(_ message: InboundMessage) {
        guard let routed = RoutedType(parsing: message.typeName), routed.typeName == FaultTests.sequenceType,
            let sequence = Int(String(buffer: message.payload))
        else {
            state.withLock { $0.unparsable += 1 }
            return
        }
        state.withLock { state in
            if sequence != state.next[routed.target, default: 0] { state.outOfOrder += 1 }
            state.next[routed.target] = sequence + 1
            state.delivered += 1
            state.lastDelivery = .now
        }
    }
}
