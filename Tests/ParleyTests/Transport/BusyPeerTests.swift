import Foundation
import NIOCore
import NIOPosix
@testable import Parley
import ParleyTestSupport
import Testing

/// Regressions found by the load tests (Tests/ParleyFaultTests): a node busy for seconds, and a peer that reads
/// slowly, are not dead peers.
@Suite("Busy event loops and slow readers", .timeLimit(.minutes(2)))
struct BusyPeerTests {
    /// Keeps `loop` running one task after another until `end`, so that it never polls its sockets meanwhile —
    /// what a burst of thousands of frames to handle or write does to it. Timers still fire in between.
    static func keepBusy(_ loop: any EventLoop, until end: NIODeadline, then done: @escaping @Sendable () -> Void) {
        loop.execute {
            if NIODeadline.now() < end {
                keepBusy(loop, until: end, then: done)
            } else {
                done()
            }
        }
    }

    @Test("a connection survives its event loop being too busy to read for three times the heartbeat timeout")
    func busyLoopKeepsConnection() async throws {
        // Loops of their own: keeping the shared ones busy for seconds would hold up every other test in the process.
        let loops = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        func fastHeartbeats(_ configuration: inout TransceiverConfiguration) {
            configuration.eventLoopGroup = loops
            // Not much shorter: the other side's loop, which is not kept busy, must not itself be starved past the
            // timeout by the rest of a full test run on a 2-core machine.
            configuration.heartbeatInterval = .milliseconds(200)
            configuration.heartbeatTimeout = .milliseconds(700)
        }
        let server = makeTransceiver("server", adjust: fastHeartbeats)
        let client = makeTransceiver("client", listen: nil, adjust: fastHeartbeats)
        server.respond(to: Echo.self) { echo, _ in echo }
        let events = client.peerEvents
        let ended = Task { () -> DisconnectReason? in
            for await event in events { if case .disconnected(_, let reason) = event { return reason } }
            return nil
        }
        defer { ended.cancel() }
        try await withRunning([server, client]) {
            let peer = try await client.connect(to: server.loopbackEndpoint)
            // A few heartbeats first, so each side has had its loop polled since the connection started. Real sleep:
            // the test needs heartbeats to have passed, and heartbeats are time.
            try await Task.sleep(for: .milliseconds(800))
            guard let connection = client.registry.connection(for: peer.id) else {
                Issue.record("the connection ended before the test began: \(await ended.value.map(String.init(describing:)) ?? "?")")
                return
            }
            let loop = connection.channel.eventLoop
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                Self.keepBusy(loop, until: .now() + .milliseconds(2100)) { done.resume() }
            }
            // Meanwhile both sides' heartbeat timers fired on a loop that could not read the other's pings.
            let reply = try await client.request(Echo(text: "still here"), from: peer, expecting: Echo.self, timeout: .seconds(10))
            #expect(reply.text == "still here")
            #expect(client.peers.map(\.id) == [peer.id])
            #expect(server.peers.count == 1)
        }
        try await loops.shutdownGracefully()
    }

    @Test("a vanished peer is still noticed by the heartbeat while the loop is free")
    func vanishedPeerStillNoticed() async throws {
        let server = makeTransceiver("server") {
            $0.heartbeatInterval = .milliseconds(200)
            $0.heartbeatTimeout = .milliseconds(600)
        }
        try await withRunning([server]) {
            // A hand-written peer that lists `heartbeat` and then never sends another byte.
            let socket = try await RawConnection.open(port: server.listeningPort!)
            try await socket.write(rawHello(json: #"{"peerID":"\#(UUID().uuidString)","name":"mute","capabilities":["heartbeat"],"accepts":[]}"#))
            let (_, closed) = try await socket.bytes(timeout: .seconds(15))
            #expect(closed, "the server kept a silent peer that speaks heartbeats")
        }
    }

    @Test("broadcast keeps a peer that reads slowly, even when its queue takes longer than slowPeerTimeout to drain")
    func slowReaderIsNotDropped() async throws {
        // The queue drains from 16 MiB to its low watermark at about 3 MB/s: over five seconds, against four seconds
        // of patience. Only a queue from which nothing leaves for four seconds means the peer has stopped reading
        // (this one reads in bursts: 16 frames, then 16 × 20 ms of handling). Four, not less: in the full suite on a
        // 2-core machine the reader's handlers can be held up for a couple of seconds by other tests.
        let loops = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        func tuned(_ configuration: inout TransceiverConfiguration) {
            configuration.outboundHighWatermark = 16 * 1024 * 1024
            configuration.outboundLowWatermark = 64 * 1024
            configuration.slowPeerTimeout = .seconds(4)
            // Loops of their own: on the shared ones, another test's burst delayed the reader past the stall timeout
            // (1 failure in 10 full runs); what is under test is this reader's pace, not the rest of the suite's.
            configuration.eventLoopGroup = loops
        }
        let hub = makeTransceiver("hub", adjust: tuned)
        let reader = makeTransceiver("slow-reader", listen: nil, adjust: tuned)
        let received = Counter()
        reader.receiveRaw(typeName: RawBlob.typeName) { _, _ in
            // Real sleep: the slow reader under test takes 20 ms per message.
            try await Task.sleep(for: .milliseconds(20))
            received.increment()
        }
        try await withRunning([hub, reader]) {
            try await reader.connect(to: hub.loopbackEndpoint)
            #expect(await eventually(peersOf: hub) { $0.count == 1 })
            let blob = RawBlob.payload(size: 64 * 1024)
            let total = 450  // 29 MB: more than the kernel's buffers and the queue hold, so broadcast has to wait
            for _ in 0..<total {
                #expect(try await hub.broadcastRaw(typeName: RawBlob.typeName, payload: blob) == 1)
            }
            #expect(hub.statistics.slowPeersDropped == 0)
            #expect(await eventually(timeout: .seconds(30)) { received.count == total })
        }
        try await loops.shutdownGracefully()
    }

    @Test("broadcastRawIfRoom queues a run to every peer, or, when one peer's queue is full, to none of them")
    func broadcastAllOrNone() async throws {
        let hub = makeTransceiver("hub") { $0.outboundHighWatermark = 256 * 1024 }
        let reader = makeTransceiver("reader", listen: nil)
        let stalled = makeTransceiver("stalled", listen: nil)
        let readerCount = Counter()
        let marker = "test.Marker"
        let markerSeen = Observed<Int?>(nil)
        reader.receiveRaw(typeName: RawBlob.typeName) { _, _ in readerCount.increment() }
        reader.receiveRaw(typeName: marker) { _, _ in markerSeen.update { $0 = readerCount.count } }
        let released = Latch()
        stalled.receiveRaw(typeName: RawBlob.typeName) { _, _ in try await released.wait() }
        try await withRunning([hub, reader, stalled]) {
            try await reader.connect(to: hub.loopbackEndpoint)
            try await stalled.connect(to: hub.loopbackEndpoint)
            #expect(await eventually(peersOf: hub) { $0.count == 2 })
            let peers = hub.peers.map(\.id)
            let blob = RawBlob.payload(size: 64 * 1024)
            // Until the stalled peer's socket and queue are full: every run before goes to both.
            var queued = 0
            while let reached = try hub.broadcastRawIfRoom(typeName: RawBlob.typeName, payloads: [blob], among: peers) {
                #expect(Set(reached) == Set(peers))
                queued += 1
                if queued > 2_000 { break }
            }
            #expect(queued > 0 && queued <= 2_000)
            // The refused run reached nobody: behind everything queued for the reader comes the marker, and the
            // reader has counted exactly the runs that were queued.
            let readerID = try #require(hub.peers.first { $0.name == "reader" }?.id)
            try await hub.sendRaw(typeName: marker, payload: ByteBuffer(string: "{}"), to: readerID)
            #expect(try await markerSeen.wait(for: "the marker", timeout: .seconds(20)) { $0 } == queued)
            released.open()
        }
    }
}
