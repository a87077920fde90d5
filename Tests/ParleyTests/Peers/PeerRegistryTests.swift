import Foundation
@testable import Parley
import ParleyTestSupport
import Testing

@Suite("Peer registry: events, the peer gate and departures, without sockets")
struct PeerRegistryTests {
    static let alice = PeerID(rawValue: "00000000-0000-4000-8000-00000000000a")!
    static let bob = PeerID(rawValue: "00000000-0000-4000-8000-00000000000b")!
    static let me = PeerID(rawValue: "00000000-0000-4000-8000-000000000001")!

    static func peer(_ id: PeerID, name: String, accepts: [String] = []) -> Peer {
        Peer(id: id, name: name, address: "10.0.0.2:7206", protocolVersion: 1, accepts: accepts)
    }

    @Test("connecting and disconnecting are reported to every subscriber, in order")
    func events() async throws {
        let registry = PeerRegistry<Int>()
        let first = registry.events()
        let second = registry.events()
        #expect(registry.open(1))
        #expect(registry.register(1, peer: Self.peer(Self.alice, name: "alice"), dialer: Self.me) == .connected)
        #expect(registry.remove(1, peer: Self.alice, reason: .peerClosed) == .gone(Self.peer(Self.alice, name: "alice")))
        registry.finish()
        for stream in [first, second] {
            var seen: [PeerEvent] = []
            for await event in stream { seen.append(event) }
            #expect(seen == [.connected(Self.peer(Self.alice, name: "alice")), .disconnected(Self.peer(Self.alice, name: "alice"), reason: .peerClosed)])
            guard case .disconnected(_, let reason) = seen.last else { continue }
            #expect(reason == .peerClosed)
        }
    }

    /// What parleyd's routing cache relies on: a peer joining or leaving always changes the version.
    @Test("the version changes when a peer registers or leaves, not when a connection merely opens")
    func versionFollowsThePeers() {
        let registry = PeerRegistry<Int>()
        let initial = registry.version
        #expect(registry.open(1))
        #expect(registry.version == initial)
        _ = registry.register(1, peer: Self.peer(Self.alice, name: "alice"), dialer: Self.me)
        let withAlice = registry.version
        #expect(withAlice != initial)
        _ = registry.remove(1, peer: Self.alice, reason: .peerClosed)
        #expect(registry.version != withAlice)
        #expect(registry.peers.isEmpty)
    }

    @Test("a retired duplicate ending reports nothing and leaves the peer connected")
    func duplicateEnds() {
        let registry = PeerRegistry<Int>()
        _ = registry.open(1)
        _ = registry.open(2)
        #expect(registry.register(1, peer: Self.peer(Self.alice, name: "alice"), dialer: Self.me) == .connected)
        // alice dials too, and her id is larger: the connection we dialled (1) wins on both sides.
        #expect(registry.register(2, peer: Self.peer(Self.alice, name: "alice"), dialer: Self.alice) == .duplicate)
        #expect(registry.remove(2, peer: Self.alice, reason: .duplicate) == nil)
        #expect(registry.connection(for: Self.alice) == 1)
        #expect(registry.connections == [1])
    }

    @Test("the gate opens at once for a connected match, later for one that connects, never for a non-match")
    func gate() async throws {
        let registry = PeerRegistry<Int>()
        _ = registry.open(1)
        _ = registry.register(1, peer: Self.peer(Self.alice, name: "alice"), dialer: Self.me)
        let now = try await registry.waitForPeer { $0.name == "alice" }
        #expect(now.id == Self.alice)

        let accepting = Inbox<Peer>()
        let waiter = Task { accepting.put(try await registry.waitForPeer { $0.accepts.contains("listr.Add") }) }
        #expect(await eventually { registry.waiting.gate == 1 })
        // A registration that matches nothing does not open the gate...
        _ = registry.open(2)
        _ = registry.register(2, peer: Self.peer(Self.bob, name: "bob"), dialer: Self.me)
        #expect(registry.peers.map(\.name) == ["alice", "bob"])
        #expect(registry.waiting.gate == 1)
        _ = registry.remove(2, peer: Self.bob, reason: .peerClosed)
        // ...and one that matches does.
        _ = registry.open(3)
        _ = registry.register(3, peer: Self.peer(Self.bob, name: "bob", accepts: ["listr.Add"]), dialer: Self.me)
        let opened = try await accepting.next()
        #expect(opened.id == Self.bob && opened.accepts == ["listr.Add"])
        try await waiter.value
    }

    @Test("closing fails gate waiters and refuses new connections; cancelling a waiter ends only that wait")
    func closeAndCancel() async throws {
        let registry = PeerRegistry<Int>()
        let cancelled = Task { try await registry.waitForPeer { _ in true } }
        cancelled.cancel()
        await #expect(throws: CancellationError.self) { try await cancelled.value }

        let closing = Task { try await registry.waitForPeer { _ in true } }
        let departure = Task { await registry.waitUntilDisconnected(Self.alice) }
        await departure.value  // alice is not connected: returns at once
        registry.close()
        await #expect(throws: PeerRegistry<Int>.GateError.closed) { try await closing.value }
        #expect(!registry.open(9))
        await registry.waitUntilClosed()
    }

    @Test("a departure waiter returns when the peer's active connection ends, not when a duplicate does")
    func departure() async throws {
        let registry = PeerRegistry<Int>()
        _ = registry.open(1)
        _ = registry.open(2)
        _ = registry.register(1, peer: Self.peer(Self.alice, name: "alice"), dialer: Self.me)
        _ = registry.register(2, peer: Self.peer(Self.alice, name: "alice"), dialer: Self.alice)
        let left = Inbox<String>()
        let waiter = Task {
            await registry.waitUntilDisconnected(Self.alice)
            left.put("left")
        }
        let events = registry.events()
        #expect(await eventually { registry.waiting.departures == 1 })
        registry.remove(2, peer: Self.alice, reason: .duplicate)
        #expect(registry.waiting.departures == 1, "the end of a duplicate woke the departure waiter")
        registry.remove(1, peer: Self.alice, reason: .silent(.seconds(6)))
        // Ordering through the event stream: the disconnect is reported, and the departure waiter returns.
        var iterator = events.makeAsyncIterator()
        let event = await iterator.next()
        #expect(event == .disconnected(Self.peer(Self.alice, name: "alice"), reason: .silent(.seconds(6))))
        #expect(try await left.next() == "left")
        await waiter.value
    }

    @Test("a connection the remote side closed as a duplicate hands the peer over: no events, the gate waits for the new connection")
    func handover() async throws {
        let registry = PeerRegistry<Int>()
        let events = registry.events()
        _ = registry.open(1)
        _ = registry.open(2)
        #expect(registry.register(1, peer: Self.peer(Self.alice, name: "alice"), dialer: Self.alice) == .connected)
        #expect(registry.remove(1, peer: Self.alice, reason: .duplicate, handedOver: true) == .handover(Self.peer(Self.alice, name: "alice")))
        #expect(registry.peers.map(\.name) == ["alice"], "a peer being handed over is still listed")
        #expect(registry.connection(for: Self.alice) == nil)

        // Nothing to send on yet: the gate waits for the kept connection; a departure waiter keeps waiting.
        let gate = Task { try await registry.waitForPeer { $0.name == "alice" } }
        let departure = Task { await registry.waitUntilDisconnected(Self.alice) }
        #expect(await eventually { registry.waiting.gate == 1 && registry.waiting.departures == 1 })
        #expect(registry.register(2, peer: Self.peer(Self.alice, name: "alice"), dialer: Self.me) == .handedOver)
        #expect(try await gate.value.id == Self.alice)
        #expect(registry.connection(for: Self.alice) == 2)
        #expect(registry.expireHandover(of: Self.alice, reason: .peerClosed) == nil, "a completed handover cannot expire")

        // A handover that does not complete reports the peer gone when it expires.
        #expect(registry.remove(2, peer: Self.alice, reason: .duplicate, handedOver: true) != nil)
        #expect(registry.expireHandover(of: Self.alice, reason: .peerSaidGoodbye(.duplicateConnection, message: "another connection to this peer is kept"))?.id == Self.alice)
        await departure.value
        registry.finish()
        var seen: [PeerEvent] = []
        for await event in events { seen.append(event) }
        #expect(seen == [
            .connected(Self.peer(Self.alice, name: "alice")),
            .disconnected(Self.peer(Self.alice, name: "alice"), reason: .peerSaidGoodbye(.duplicateConnection, message: "another connection to this peer is kept")),
        ])
        guard case .disconnected(_, let reason) = seen.last else { return }
        #expect(reason == .peerSaidGoodbye(.duplicateConnection, message: "another connection to this peer is kept"))
    }
}
