import Foundation
import NIOFoundationCompat
import NIOCore
import NIOPosix
import NIOFoundationCompat
@testable import Parley
import ParleyTestSupport
import Testing

/// The same behaviour across a process boundary: the other peer is `parley-test-peer`, a separate executable.
@Suite("Messaging between two processes", .timeLimit(.minutes(2)))
struct TwoProcessTests {
    @Test("typed request/reply and a 16 MB payload to a peer in another process")
    func roundTripAndLargePayload() async throws {
        let child = try await PeerProcess.start(arguments: ["serve"])
        defer { child.terminate() }
        let local = makeTransceiver("local", listen: nil)
        try await withRunning([local]) {
            let peer = try await local.connect(to: Endpoint(host: "127.0.0.1", port: child.port))
            #expect(peer.id.rawValue == child.peerID)
            #expect(try await local.request(Echo(text: "across"), from: peer, expecting: Echo.self).text == "across")
            let payload = RawBlob.payload(size: 16 * 1024 * 1024)
            let reply = try await local.requestRaw(typeName: RawBlob.typeName, payload: payload, from: peer.id, timeout: .seconds(60))
            #expect(try JSONDecoder().decode(BlobDigest.self, from: reply.payload) == BlobDigest(of: payload))
        }
    }

    @Test("10 000 messages from another process arrive in order with none lost")
    func tenThousandFromChild() async throws {
        let local = makeTransceiver("local")
        let tracker = SequenceTracker()
        local.receive(Sequenced.self) { message, _ in await tracker.record(message) }
        local.respond(to: ProgressQuery.self) { _, _ in await tracker.progress }
        try await withRunning([local]) {
            let child = try await PeerProcess.start(arguments: ["stream", "127.0.0.1:\(local.listeningPort!)", "10000"])
            defer { child.terminate() }
            // The child exits 0 only after our answer to its ProgressQuery shows all 10 000 in order.
            #expect(await child.waitForExit() == 0)
            let progress = await tracker.progress
            #expect(progress.received == 10_000 && progress.outOfOrder == 0 && progress.lastSequence[child.peerID] == 9_999)
        }
    }

    @Test("a request to another process times out with a typed error when the reply is too slow")
    func requestTimeout() async throws {
        let child = try await PeerProcess.start(arguments: ["serve"])
        defer { child.terminate() }
        let local = makeTransceiver("local", listen: nil)
        try await withRunning([local]) {
            let peer = try await local.connect(to: Endpoint(host: "127.0.0.1", port: child.port))
            await #expect(throws: TransceiverError.self) {
                _ = try await local.request(SlowRequest(milliseconds: 2000), from: peer, expecting: Echo.self, timeout: .milliseconds(200))
            }
        }
    }

    @Test("a peer killed mid-stream is reported disconnected, and the other peer is served as before")
    func killedMidStream() async throws {
        // Loops of their own, as the busy-loop tests: on the shared ones another test's burst kept the survivor's
        // pings unanswered past its heartbeat timeout (1 failure in 10 full runs).
        let loops = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        defer { loops.shutdownGracefully { _ in } }
        let local = makeTransceiver("local") { $0.eventLoopGroup = loops }
        let tracker = SequenceTracker()
        local.receive(Sequenced.self) { message, _ in await tracker.record(message) }
        try await withRunning([local]) {
            let events = local.peerEvents
            let survivor = try await PeerProcess.start(arguments: ["serve"])
            defer { survivor.terminate() }
            let survivorPeer = try await local.connect(to: Endpoint(host: "127.0.0.1", port: survivor.port))
            let streamer = try await PeerProcess.start(arguments: ["stream", "127.0.0.1:\(local.listeningPort!)"])
            #expect(await eventually { await tracker.progress.received > 100 })
            let killedAt = ContinuousClock.now
            await streamer.kill()
            var disconnected: Peer?
            var others: [String] = []  // why any other peer left, for the failure message (seen once in 10 full runs)
            for await event in events {
                guard case .disconnected(let peer, let reason) = event else { continue }
                if peer.id.rawValue == streamer.peerID {
                    disconnected = peer
                    break
                }
                others.append("\(peer.name): \(reason)")
            }
            #expect(others.isEmpty, "\(others)")
            #expect(disconnected != nil)
            #expect(ContinuousClock.now - killedAt < .seconds(5))
            let progress = await tracker.progress
            #expect(progress.outOfOrder == 0)
            #expect(try await local.request(Echo(text: "still"), from: survivorPeer, expecting: Echo.self).text == "still")
        }
    }
}
