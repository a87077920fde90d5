/// Which connection carries each peer's traffic. A plain state machine: it decides, the transceiver acts.
///
/// At most one connection per peer is active. When a second one completes its handshake (the two peers
/// dialled each other at the same moment, or a reconnect raced an old connection), both sides must drop the
/// same one without talking about it, so the rule depends only on facts both sides share:
/// - connections dialled by different peers: keep the one dialled by the peer with the smaller id;
/// - connections dialled by the same peer: keep the newer one (the older is usually a dead link not yet noticed).
struct PeerTable<Connection: Hashable & Sendable>: Sendable {
    struct Candidate: Sendable {
        var connection: Connection
        var peer: Peer
        /// The id of the peer that dialled this connection.
        var dialer: PeerID
    }

    enum RegisterAction: Sendable, Equatable {
        /// The peer is new: this connection is active; report the peer connected.
        case connected
        /// The peer was already connected; this connection replaces the active one, which is to be closed as a duplicate.
        case replaced(old: Connection)
        /// The peer is already connected by a connection that wins; close this one as a duplicate.
        case duplicate
    }

    enum RemoveAction: Sendable, Equatable {
        /// The active connection of the peer ended: report the peer disconnected.
        case disconnected(Peer)
        /// A connection that was not active ended; nothing to report.
        case none
    }

    private(set) var active: [PeerID: Candidate] = [:]
    private var retired: Set<Connection> = []

    var peers: [Peer] { active.values.map(\.peer).sorted { $0.connectedAt < $1.connectedAt } }

    func connection(for peer: PeerID) -> Connection? { active[peer]?.connection }

    mutating func register(_ candidate: Candidate) -> RegisterAction {
        guard let existing = active[candidate.peer.id] else {
            active[candidate.peer.id] = candidate
            return .connected
        }
        let newWins: Bool
        if existing.dialer == candidate.dialer {
            newWins = true
        } else {
            newWins = candidate.dialer < existing.dialer
        }
        if newWins {
            var replacement = candidate
            // The peer stays connected through the switch, so it keeps its original connection time.
            replacement.peer = Peer(
                id: candidate.peer.id, name: candidate.peer.name, kind: candidate.peer.kind,
                address: candidate.peer.address, protocolVersion: candidate.peer.protocolVersion,
                capabilities: candidate.peer.capabilities, accepts: candidate.peer.accepts,
                connectedAt: existing.peer.connectedAt
            )
            active[candidate.peer.id] = replacement
            retired.insert(existing.connection)
            return .replaced(old: existing.connection)
        }
        retired.insert(candidate.connection)
        return .duplicate
    }

    mutating func remove(_ connection: Connection, peer: PeerID) -> RemoveAction {
        if retired.remove(connection) != nil { return .none }
        guard let existing = active[peer], existing.connection == connection else { return .none }
        active[peer] = nil
        return .disconnected(existing.peer)
    }
}
