import Foundation
@testable import Parley
import Testing

@Suite("Peer table: one connection per peer")
struct PeerTableTests {
    static let small = PeerID(rawValue: "00000000-0000-4000-8000-000000000001")!
    static let large = PeerID(rawValue: "ffffffff-0000-4000-8000-000000000001")!

    static func candidate(_ connection: Int, peer: PeerID, dialer: PeerID, at time: TimeInterval = 0) -> PeerTable<Int>.Candidate {
        let peer = Peer(
            id: peer, name: "p", address: "c\(connection)", protocolVersion: 1,
            connectedAt: Date(timeIntervalSince1970: time)
        )
        return .init(connection: connection, peer: peer, dialer: dialer)
    }

    @Test("a new peer is connected; its connection ending reports it disconnected")
    func newPeer() {
        var table = PeerTable<Int>()
        #expect(table.register(Self.candidate(1, peer: Self.large, dialer: Self.small)) == .connected)
        #expect(table.connection(for: Self.large) == 1)
        guard case .disconnected(let peer) = table.remove(1, peer: Self.large) else {
            Issue.record("no disconnect reported")
            return
        }
        #expect(peer.id == Self.large && table.peers.isEmpty)
        #expect(table.connection(for: Self.large) == nil)
    }

    @Test("simultaneous connects: both sides keep the connection dialled by the smaller id, whatever the order")
    func simultaneous() {
        // Seen from the large-id node: connection 1 dialled by small (peer = small), connection 2 dialled by us.
        var first = PeerTable<Int>()
        #expect(first.register(Self.candidate(1, peer: Self.small, dialer: Self.small)) == .connected)
        #expect(first.register(Self.candidate(2, peer: Self.small, dialer: Self.large)) == .duplicate)
        #expect(first.connection(for: Self.small) == 1)

        var reversed = PeerTable<Int>()
        #expect(reversed.register(Self.candidate(2, peer: Self.small, dialer: Self.large)) == .connected)
        #expect(reversed.register(Self.candidate(1, peer: Self.small, dialer: Self.small)) == .replaced(old: 2))
        #expect(reversed.connection(for: Self.small) == 1)
    }

    @Test("the same dialer connecting again replaces the old connection, keeping the original connection time")
    func reconnect() {
        var table = PeerTable<Int>()
        _ = table.register(Self.candidate(1, peer: Self.large, dialer: Self.small, at: 100))
        #expect(table.register(Self.candidate(2, peer: Self.large, dialer: Self.small, at: 200)) == .replaced(old: 1))
        #expect(table.peers.first?.connectedAt == Date(timeIntervalSince1970: 100))
        #expect(table.peers.first?.address == "c2")
        #expect(table.connection(for: Self.large) == 2)
    }

    @Test("closing a retired duplicate reports nothing; the peer stays connected")
    func retiredClose() {
        var table = PeerTable<Int>()
        _ = table.register(Self.candidate(1, peer: Self.small, dialer: Self.small))
        _ = table.register(Self.candidate(2, peer: Self.small, dialer: Self.large))
        #expect(table.remove(2, peer: Self.small) == .none)
        #expect(table.connection(for: Self.small) == 1)
        #expect(table.remove(1, peer: Self.small) != .none)
    }

    @Test("a handover keeps the peer listed with its connection time until the kept connection registers")
    func handover() {
        var table = PeerTable<Int>()
        _ = table.register(Self.candidate(1, peer: Self.small, dialer: Self.small, at: 100))
        guard case .handover(let peer) = table.remove(1, peer: Self.small, handedOver: true) else {
            Issue.record("no handover")
            return
        }
        #expect(peer.id == Self.small && table.isConnected(Self.small) && table.reachablePeers.isEmpty)
        #expect(table.connection(for: Self.small) == nil, "nothing to send on until the kept connection registers")
        #expect(table.register(Self.candidate(2, peer: Self.small, dialer: Self.large, at: 200)) == .handedOver)
        #expect(table.peers.first?.connectedAt == Date(timeIntervalSince1970: 100))
        #expect(table.connection(for: Self.small) == 2)
        #expect(table.expireHandover(of: Self.small) == nil)
    }

    @Test("a connection the remote dialled that claims a connected peer's id from another host is refused; from the same host it replaces")
    func claims() {
        var table = PeerTable<Int>()
        func from(_ connection: Int, _ host: String, dialer: PeerID = Self.large) -> PeerTable<Int>.Candidate {
            var candidate = Self.candidate(connection, peer: Self.large, dialer: dialer)
            candidate.host = host
            return candidate
        }
        #expect(table.register(from(1, "10.0.0.2")) == .connected)
        #expect(table.register(from(2, "10.0.0.66")) == .claimRefused(connectedFrom: "10.0.0.2"))
        #expect(table.connection(for: Self.large) == 1, "the connected one keeps the id")
        #expect(table.register(from(3, "10.0.0.2")) == .replaced(old: 1), "a reconnect from the same host")
        // Connections this node dialled are its own choice: two addresses of one peer are not a claim.
        #expect(table.register(from(4, "10.0.0.3", dialer: Self.small)) == .replaced(old: 3))
    }

    @Test("after a handover the kept connection's address still guards the id against a claim from another host")
    func claimAfterHandover() {
        var table = PeerTable<Int>()
        func from(_ connection: Int, _ host: String) -> PeerTable<Int>.Candidate {
            var candidate = Self.candidate(connection, peer: Self.large, dialer: Self.large)
            candidate.host = host
            return candidate
        }
        _ = table.register(from(1, "10.0.0.2"))
        _ = table.remove(1, peer: Self.large, handedOver: true)
        #expect(table.register(from(2, "10.0.0.2")) == .handedOver)
        #expect(table.register(from(3, "10.0.0.66")) == .claimRefused(connectedFrom: "10.0.0.2"))
        #expect(table.connection(for: Self.large) == 2)
    }
}
