/// Which connection carries each peer's traffic. A plain state machine: it decides, the transceiver acts.
///
/// At most one connection per peer is active. When a second one completes its handshake (the two peers
/// dialled each other at the same moment, or a reconnect raced an old connection), both sides must drop the
/// same one without talking about it, so the rule depends only on facts both sides share:
/// - connections dialled by different peers: keep the one dialled by the peer with the smaller id;
/// - connections dialled by the same peer: keep the newer one (the older is usually a dead link not yet noticed),
///   if it comes from the same host; a connection the remote dialled that claims the id of a peer connected from
///   another address is refused (in open mode anyone can write any id in a hello: the claim must not take over the
///   connection, nor what is sent to it).
///
/// The side that decides first closes the loser with a `duplicate-connection` goodbye. When that loser was the
/// other side's active connection, the other side has not yet finished its handshake on the winner: the peer is
/// then *handed over* rather than reported gone, until the winner registers (or the handover expires).
struct PeerTable<Connection: Hashable & Sendable>: Sendable {
    struct Candidate: Sendable {
        var connection: Connection
        var peer: Peer
        /// The id of the peer that dialled this connection.
        var dialer: PeerID
        /// The remote IP address (nil for the control socket).
        var host: String? = nil
    }

    enum RegisterAction: Sendable, Equatable {
        /// The peer is new: this connection is active; report the peer connected.
        case connected
        /// The peer was already connected; this connection replaces the active one, which is to be closed as a duplicate.
        case replaced(old: Connection)
        /// The peer is already connected by a connection that wins; close this one as a duplicate.
        case duplicate
        /// The remote dialled this connection claiming the id of a peer connected from another address
        /// (`connectedFrom`): refuse it; the connected one keeps the id.
        case claimRefused(connectedFrom: String)
        /// The peer was being handed over (its remote side kept another connection): this is that connection. The
        /// peer stayed connected throughout; nothing to report.
        case handedOver
    }

    enum RemoveAction: Sendable, Equatable {
        /// The active connection of the peer ended: report the peer disconnected.
        case disconnected(Peer)
        /// The active connection ended because the remote side kept another one: wait for that one to register
        /// (``expireHandover(of:)`` when it does not come in time).
        case handover(Peer)
        /// A connection that was not active ended; nothing to report.
        case none
    }

    private(set) var active: [PeerID: Candidate] = [:]
    /// Each active peer's connection alone: the send path asks for it with every message, and reading it out of
    /// `active` copies the whole entry (the peer's strings and lists, a retain each). Set with `active`, in
    /// ``setActive(_:for:)`` only.
    private var connections: [PeerID: Connection] = [:]
    /// Peers between connections: their remote side closed our active connection as a duplicate of another.
    private var handovers: [PeerID: Peer] = [:]
    private var retired: Set<Connection> = []

    /// Connected peers, oldest first, including peers being handed over to another connection.
    var peers: [Peer] { (active.values.map(\.peer) + handovers.values).sorted { $0.connectedAt < $1.connectedAt } }

    /// Peers with a connection to send on (not being handed over), oldest first.
    var reachablePeers: [Peer] { active.values.map(\.peer).sorted { $0.connectedAt < $1.connectedAt } }

    func connection(for peer: PeerID) -> Connection? { connections[peer] }

    /// Connected, or being handed over to another connection.
    func isConnected(_ peer: PeerID) -> Bool { active[peer] != nil || handovers[peer] != nil }

    mutating func register(_ candidate: Candidate) -> RegisterAction {
        if let handedOver = handovers.removeValue(forKey: candidate.peer.id) {
            setActive(
                Candidate(
                    connection: candidate.connection, peer: candidate.peer.keepingConnectionTime(of: handedOver),
                    dialer: candidate.dialer, host: candidate.host
                ),
                for: candidate.peer.id
            )
            return .handedOver
        }
        guard let existing = active[candidate.peer.id] else {
            setActive(candidate, for: candidate.peer.id)
            return .connected
        }
        let newWins: Bool
        if existing.dialer == candidate.dialer {
            if candidate.dialer == candidate.peer.id, let connectedFrom = existing.host, let host = candidate.host, host != connectedFrom {
                return .claimRefused(connectedFrom: connectedFrom)
            }
            newWins = true
        } else {
            newWins = candidate.dialer < existing.dialer
        }
        if newWins {
            var replacement = candidate
            // The peer stays connected through the switch, so it keeps its original connection time.
            replacement.peer = candidate.peer.keepingConnectionTime(of: existing.peer)
            setActive(replacement, for: candidate.peer.id)
            retired.insert(existing.connection)
            return .replaced(old: existing.connection)
        }
        retired.insert(candidate.connection)
        return .duplicate
    }

    /// A connection ended. `handedOver`: the remote side said it keeps another connection to us.
    mutating func remove(_ connection: Connection, peer: PeerID, handedOver: Bool = false) -> RemoveAction {
        if retired.remove(connection) != nil { return .none }
        guard let existing = active[peer], existing.connection == connection else { return .none }
        setActive(nil, for: peer)
        if handedOver {
            handovers[peer] = existing.peer
            return .handover(existing.peer)
        }
        return .disconnected(existing.peer)
    }

    private mutating func setActive(_ candidate: Candidate?, for peer: PeerID) {
        active[peer] = candidate
        connections[peer] = candidate?.connection
    }

    /// The handover of `peer` did not complete in time: returns the peer, now gone; nil if it completed.
    mutating func expireHandover(of peer: PeerID) -> Peer? {
        handovers.removeValue(forKey: peer)
    }
}
