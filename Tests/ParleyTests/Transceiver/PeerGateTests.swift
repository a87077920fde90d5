import Foundation
@testable import Parley
import ParleyTestSupport
import Testing

@Suite("The peer gate", .timeLimit(.minutes(1)))
struct PeerGateTests {
    @Test("waitForPeer returns the peer once it connects, and at once when one is already connected")
    func waitsUntilConnected() async throws {
        let server = makeTransceiver("server")
        let client = makeTransceiver("client", listen: nil)
        try await withRunning([server, client]) {
            async let gated = server.waitForPeer(timeout: .seconds(10))
            // The gate is really closed: the call is parked in the registry, waiting for a connection.
            #expect(await eventually { server.registry.waiting.gate == 1 })
            #expect(server.peers.isEmpty)
            _ = try await client.connect(to: server.loopbackEndpoint)
            let peer = try await gated
            #expect(peer.name == "client")
            #expect(try await server.waitForPeer(timeout: .milliseconds(1)).id == peer.id)
        }
    }

    @Test("the predicate is honoured: a non-matching peer does not open the gate")
    func predicate() async throws {
        let server = makeTransceiver("server")
        let wrong = makeTransceiver("phone", listen: nil)
        let right = makeTransceiver("debugger", listen: nil)
        try await withRunning([server, wrong, right]) {
            async let gated = server.waitForPeer(timeout: .seconds(10), description: "debugger") { $0.name == "debugger" }
            _ = try await wrong.connect(to: server.loopbackEndpoint)
            #expect(await eventually(peersOf: server) { $0.count == 1 })
            _ = try await right.connect(to: server.loopbackEndpoint)
            #expect(try await gated.name == "debugger")
        }
    }

    @Test("a timeout is a typed error that says what was waited for and for how long")
    func timeout() async throws {
        let node = makeTransceiver("lonely")
        try await withRunning([node]) {
            do {
                _ = try await node.waitForPeer(timeout: .milliseconds(200), description: "debugger named \"mac\"")
                Issue.record("the gate opened with no peer")
            } catch let error as TransceiverError {
                guard case .noPeer(let what, let timeout) = error else { throw error }
                #expect(what == "debugger named \"mac\"" && timeout == .milliseconds(200))
                #expect(error.description == "no debugger named \"mac\" connected within 0.2 s")
            }
        }
    }

    @Test("the blocking form waits on a semaphore in synchronous code, then the message is sent through the gate")
    func blockingForm() async throws {
        let server = makeTransceiver("server")
        let client = makeTransceiver("cli", listen: nil)
        let inbox = Inbox<Echo>()
        server.receive(Echo.self) { echo, _ in inbox.put(echo) }
        try await withRunning([server, client]) {
            // A synchronous command-line tool: its own thread blocks on the gate (never the cooperative pool).
            async let gated = PeerProcess.offPool { try client.waitForPeerBlocking(timeout: .seconds(10)) }
            #expect(client.peers.isEmpty)
            _ = try await client.connect(to: server.loopbackEndpoint)
            let peer = try await gated
            try await client.send(Echo(text: "after the gate"), to: peer)
            #expect(try await inbox.take() == [Echo(text: "after the gate")])

            let lonely = makeTransceiver("lonely", listen: nil)
            try await lonely.start()
            await #expect(throws: TransceiverError.self) {
                try await PeerProcess.offPool { try lonely.waitForPeerBlocking(timeout: .milliseconds(100)) }
            }
            await lonely.stop()
        }
    }
}
