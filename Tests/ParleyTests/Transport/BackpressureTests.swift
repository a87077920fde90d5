import Foundation
import NIOCore
@testable import Parley
import ParleyTestSupport
import Testing
import Synchronization

@Suite("Backpressure and slow peers", .timeLimit(.minutes(2)))
struct BackpressureTests {
    /// A handler that blocks until released: the peer stops reading, as a stalled app would.
    typealias Gate = Latch

    static func tuned(_ configuration: inout TransceiverConfiguration) {
        configuration.outboundHighWatermark = 256 * 1024
        configuration.outboundLowWatermark = 64 * 1024
        configuration.slowPeerTimeout = .milliseconds(300)
    }

    @Test("send waits while a stalled peer's queue is full, so the sender's queue stays bounded")
    func sendWaits() async throws {
        let gate = Gate()
        let receiver = makeTransceiver("stalled", adjust: Self.tuned)
        let sender = makeTransceiver("sender", listen: nil, adjust: Self.tuned)
        let received = Counter()
        receiver.receiveRaw(typeName: RawBlob.typeName) { _, _ in
            try await gate.wait()
            received.increment()
        }
        try await withRunning([receiver, sender]) {
            let peer = try await sender.connect(to: receiver.loopbackEndpoint)
            let blob = RawBlob.payload(size: 256 * 1024)
            let sent = Counter()
            let total = 200  // 50 MB if nothing pushed back
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for _ in 0..<total {
                        try await sender.sendRaw(typeName: RawBlob.typeName, payload: blob, to: peer.id)
                        sent.increment()
                    }
                }
                // The event under test: the sending task is parked in `send`, waiting for the queue to drain.
                #expect(await eventually { sender.registry.connection(for: peer.id)?.outbound.waitingSenders == 1 })
                let stalledAt = sent.count
                let queued = sender.registry.connection(for: peer.id)?.outbound.queuedBytes ?? -1
                // Kernel buffers absorb some; the rest must wait in `send`, not pile up in memory.
                #expect(stalledAt < total)
                #expect(queued < 256 * 1024 + 400 * 1024)
                gate.open()
                try await group.waitForAll()
            }
            #expect(await eventually { received.count == total })
        }
    }

    @Test("sendRawIfRoom queues all its payloads without waiting until a stalled peer's queue is full, then says so and queues none; a payload too large queues none; what it queued arrives in order once the peer reads")
    func sendIfRoom() async throws {
        let gate = Gate()
        let receiver = makeTransceiver("stalled", adjust: Self.tuned)
        let sender = makeTransceiver("sender", listen: nil, adjust: Self.tuned)
        let received = Mutex<[Int]>([])
        receiver.receiveRaw(typeName: RawBlob.typeName) { message, _ in
            try await gate.wait()
            received.withLock { $0.append(Int(message.payload.getInteger(at: message.payload.readerIndex, as: UInt32.self)!)) }
        }
        try await withRunning([receiver, sender]) {
            let peer = try await sender.connect(to: receiver.loopbackEndpoint)
            func blob(_ index: Int) -> ByteBuffer {
                var blob = RawBlob.payload(size: 64 * 1024)
                blob.setInteger(UInt32(index), at: blob.readerIndex)
                return blob
            }
            // A payload over the frame limit refuses the whole call before anything is queued: the first one,
            // which alone would fit, never arrives (the order check at the end).
            let tooLarge = ByteBuffer(repeating: 0, count: sender.configuration.maximumFrameSize)
            #expect {
                try sender.sendRawIfRoom(typeName: RawBlob.typeName, payloads: [blob(999_999), tooLarge], to: peer.id)
            } throws: { error in
                if case TransceiverError.messageTooLarge = error { true } else { false }
            }
            var queued = 0
            // Kernel buffers take some before the queue fills; 50 MB would be far more than they hold.
            // Two at a time: a call queues both or neither.
            while queued < 800 {
                let taken = try sender.sendRawIfRoom(typeName: RawBlob.typeName, payloads: [blob(queued), blob(queued + 1)], to: peer.id)
                #expect(taken == 0 || taken == 2)
                if taken == 0 { break }
                queued += taken
            }
            #expect(queued < 800, "the queue filled")
            #expect(sender.registry.connection(for: peer.id)?.outbound.waitingSenders == 0, "nothing waited")
            let stranger = PeerID()
            do {
                _ = try sender.sendRawIfRoom(typeName: RawBlob.typeName, payloads: [blob(0)], to: stranger)
                Issue.record("queued for a peer that is not connected")
            } catch TransceiverError.peerNotConnected(let id) {
                #expect(id == stranger)
            }
            gate.open()
            // Behind everything queued: once it arrives, all before it has, and the refused message never will.
            let last = 1_000_000
            try await sender.sendRaw(typeName: RawBlob.typeName, payload: blob(last), to: peer.id)
            #expect(await eventually { received.withLock { $0.last } == last })
            #expect(received.withLock { $0 } == Array(0..<queued) + [last])
        }
    }

    @Test("broadcast disconnects a peer whose queue stays full, and still reaches the others")
    func broadcastDropsSlowPeer() async throws {
        let gate = Gate()
        defer { gate.open() }
        // A generous timeout: only a peer that reads nothing at all may be dropped, even on a busy machine.
        let logs = LogCapture()
        let hub = makeTransceiver("hub", logs: logs) {
            Self.tuned(&$0)
            $0.slowPeerTimeout = .seconds(2)
        }
        let stalled = makeTransceiver("stalled", listen: nil, adjust: Self.tuned)
        let healthy = makeTransceiver("healthy", listen: nil, adjust: Self.tuned)
        let healthyCount = Counter()
        stalled.receiveRaw(typeName: RawBlob.typeName) { _, _ in try await gate.wait() }
        healthy.receiveRaw(typeName: RawBlob.typeName) { _, _ in healthyCount.increment() }
        try await withRunning([hub, stalled, healthy]) {
            try await stalled.connect(to: hub.loopbackEndpoint)
            try await healthy.connect(to: hub.loopbackEndpoint)
            #expect(await eventually(peersOf: hub) { $0.count == 2 })
            let blob = RawBlob.payload(size: 256 * 1024)
            var rounds = 0
            while hub.statistics.slowPeersDropped == 0 && rounds < 400 {
                try await hub.broadcastRaw(typeName: RawBlob.typeName, payload: blob)
                rounds += 1
            }
            #expect(hub.statistics.slowPeersDropped == 1)
            #expect(await eventually(peersOf: hub) { $0.map(\.name) == ["healthy"] }, "peers: \(hub.peers.map(\.name)), \(hub.statistics)")
            let broadcasts = rounds
            #expect(await eventually { healthyCount.count == broadcasts }, "healthy received \(healthyCount.count) of \(broadcasts)")
            gate.open()
        }
    }
}
