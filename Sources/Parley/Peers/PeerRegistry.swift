import Synchronization

/// The connected peers of one transceiver, and everyone waiting to hear about them.
///
/// ``PeerTable`` decides which connection carries each peer's traffic; the registry adds what happens around those
/// decisions, under one lock: it reports ``PeerEvent``s to subscribers, opens the peer gate (``waitForPeer``) and
/// wakes reconnect loops when their peer goes (``waitUntilDisconnected(_:)``). Everything that waits, waits on
/// these events: nothing polls. Generic over the connection so that it is tested without sockets.
final class PeerRegistry<Connection: Hashable & Sendable>: Sendable {
    enum GateError: Error, Equatable {
        /// The registry was closed (the transceiver is stopping) while waiting.
        case closed
    }

    private struct Waiter<Value> {
        var matches: @Sendable (Peer) -> Bool
        var continuation: CheckedContinuation<Value, any Error>
    }

    private struct State {
        var table = PeerTable<Connection>()
        /// Every open connection, registered with a peer or still in its handshake.
        var connections: Set<Connection> = []
        var subscribers: [UInt64: AsyncStream<PeerEvent>.Continuation] = [:]
        var gateWaiters: [UInt64: Waiter<Peer>] = [:]
        var departureWaiters: [UInt64: (peer: PeerID, continuation: CheckedContinuation<Void, Never>)] = [:]
        var closeWaiters: [CheckedContinuation<Void, Never>] = []
        var nextToken: UInt64 = 0
        var closed = false
        /// Counts changes of the peer table, for caches derived from it (``version``).
        var version: UInt64 = 0

        /// Hands `event` to every subscriber, in the order of the registry's changes (it runs under the lock), and
        /// forgets the subscribers whose streams ended. Forgotten here rather than by the streams' `onTermination`:
        /// that handler runs while the ending task's status is locked, and taking the registry's lock there, while
        /// another thread yields under the registry's lock to that very task, deadlocked parleyd's shutdown.
        mutating func publish(_ event: PeerEvent) {
            for (token, subscriber) in subscribers {
                if case .terminated = subscriber.yield(event) { subscribers[token] = nil }
            }
        }

        /// Tells subscribers `gone` is gone; returns the departure waiters to wake (outside the lock).
        mutating func reportGone(_ gone: Peer, reason: DisconnectReason) -> [CheckedContinuation<Void, Never>] {
            publish(.disconnected(gone, reason: reason))
            let leaving = departureWaiters.filter { $0.value.peer == gone.id }
            for token in leaving.keys { departureWaiters[token] = nil }
            return leaving.values.map(\.continuation)
        }

        mutating func token() -> UInt64 {
            nextToken += 1
            return nextToken
        }
    }

    private let state = Mutex(State())

    /// Connected peers, oldest first.
    var peers: [Peer] { state.withLock { $0.table.peers } }

    /// Changes whenever the peer table may have changed (a connection registered or removed): what was derived
    /// from ``peers`` under one version is still right while the version stays the same.
    var version: UInt64 { state.withLock { $0.version } }

    /// The connection carrying `peer`'s traffic.
    func connection(for peer: PeerID) -> Connection? { state.withLock { $0.table.connection(for: peer) } }

    /// How many wait at the gate and for departures (the tests wait until a waiter is parked).
    var waiting: (gate: Int, departures: Int) { state.withLock { ($0.gateWaiters.count, $0.departureWaiters.count) } }

    /// Every open connection (for shutdown).
    var connections: [Connection] { state.withLock { Array($0.connections) } }

    /// Notes an open connection before its handshake; false once the registry is closed (the caller closes it).
    func open(_ connection: Connection) -> Bool {
        state.withLock { state in
            guard !state.closed else { return false }
            state.connections.insert(connection)
            return true
        }
    }

    /// A connection completed its handshake with `peer`. Reports the peer connected (and opens the gate for those
    /// waiting for it) when it is new; otherwise says which connection is the duplicate to retire.
    func register(_ connection: Connection, peer: Peer, dialer: PeerID, host: String? = nil) -> PeerTable<Connection>.RegisterAction {
        let (action, waiters) = state.withLock { state -> (PeerTable<Connection>.RegisterAction, [Waiter<Peer>]) in
            let action = state.table.register(.init(connection: connection, peer: peer, dialer: dialer, host: host))
            state.version &+= 1
            switch action {
            case .connected:
                state.publish(.connected(peer))
            case .handedOver:
                break  // connected all along: no event, but the gate may open now that it can be sent to
            case .replaced, .duplicate, .claimRefused:
                return (action, [])
            }
            let opened = state.gateWaiters.filter { $0.value.matches(peer) }
            for token in opened.keys { state.gateWaiters[token] = nil }
            return (action, Array(opened.values))
        }
        for waiter in waiters { waiter.continuation.resume(returning: peer) }
        return action
    }

    /// What ending a connection meant for its peer.
    enum Departure: Equatable {
        /// The peer is gone (reported disconnected).
        case gone(Peer)
        /// The peer's remote side kept another connection, which is still completing its handshake here: the peer
        /// stays connected until ``expireHandover(of:reason:)``, which the caller schedules.
        case handover(Peer)
    }

    /// A connection ended. Reports the peer disconnected with `reason` if this was its active connection, unless
    /// `handedOver` (the remote side closed it as a duplicate of another connection). Nil for a retired duplicate
    /// or a connection without a peer.
    @discardableResult
    func remove(_ connection: Connection, peer: PeerID?, reason: DisconnectReason, handedOver: Bool = false) -> Departure? {
        let (departure, waiters) = state.withLock { state -> (Departure?, [CheckedContinuation<Void, Never>]) in
            state.connections.remove(connection)
            guard let peer else { return (nil, []) }
            state.version &+= 1
            switch state.table.remove(connection, peer: peer, handedOver: handedOver) {
            case .none: return (nil, [])
            case .handover(let peer): return (.handover(peer), [])
            case .disconnected(let gone): return (.gone(gone), state.reportGone(gone, reason: reason))
            }
        }
        for waiter in waiters { waiter.resume() }
        return departure
    }

    /// A handover that was not completed in time: the peer is gone after all. Nil if the handover completed.
    @discardableResult
    func expireHandover(of peer: PeerID, reason: DisconnectReason) -> Peer? {
        let (gone, waiters) = state.withLock { state -> (Peer?, [CheckedContinuation<Void, Never>]) in
            guard let gone = state.table.expireHandover(of: peer) else { return (nil, []) }
            state.version &+= 1
            return (gone, state.reportGone(gone, reason: reason))
        }
        for waiter in waiters { waiter.resume() }
        return gone
    }

    /// Connected and disconnected events from now on; finishes when the registry closes.
    func events() -> AsyncStream<PeerEvent> {
        let (stream, continuation) = AsyncStream<PeerEvent>.makeStream()
        let registered = state.withLock { state -> Bool in
            guard !state.closed else { return false }
            let token = state.token()
            state.subscribers[token] = continuation
            return true
        }
        if !registered { continuation.finish() }
        return stream
    }

    /// The peer gate: returns the first connected peer matching `predicate`, at once if one is connected, else
    /// when one connects. Throws ``GateError/closed`` when the registry closes, `CancellationError` when the
    /// calling task is cancelled. The predicate runs under the registry's lock: it must only look at the peer.
    func waitForPeer(matching predicate: @escaping @Sendable (Peer) -> Bool) async throws -> Peer {
        let token = state.withLock { $0.token() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let immediate: Result<Peer, any Error>? = state.withLock { state in
                    if state.closed { return .failure(GateError.closed) }
                    if Task.isCancelled { return .failure(CancellationError()) }
                    if let peer = state.table.reachablePeers.first(where: predicate) { return .success(peer) }
                    state.gateWaiters[token] = Waiter(matches: predicate, continuation: continuation)
                    return nil
                }
                if let immediate { continuation.resume(with: immediate) }
            }
        } onCancel: {
            let waiter = state.withLock { $0.gateWaiters.removeValue(forKey: token) }
            waiter?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Returns once `peer` is not connected: at once if it is not, else when its active connection ends (or the
    /// registry closes, or the calling task is cancelled). Reconnect loops wait here instead of polling.
    func waitUntilDisconnected(_ peer: PeerID) async {
        let token = state.withLock { $0.token() }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state -> Bool in
                    if state.closed || Task.isCancelled || !state.table.isConnected(peer) { return true }
                    state.departureWaiters[token] = (peer, continuation)
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { $0.departureWaiters.removeValue(forKey: token) }
            waiter?.continuation.resume()
        }
    }

    /// Returns once the registry is closed (the transceiver drains): the dialling loops stop then.
    func waitUntilClosed() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                if state.closed { return true }
                state.closeWaiters.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Stops admitting connections and fails every gate waiter. Connections already open stay registered until
    /// they end; event streams finish when ``finish()`` is called, after the last connection is gone.
    func close() {
        let (gates, departures) = state.withLock { state in
            state.closed = true
            defer {
                state.gateWaiters.removeAll()
                state.departureWaiters.removeAll()
                state.closeWaiters.removeAll()
            }
            return (Array(state.gateWaiters.values), state.departureWaiters.values.map(\.continuation) + state.closeWaiters)
        }
        for waiter in gates { waiter.continuation.resume(throwing: GateError.closed) }
        for waiter in departures { waiter.resume() }
    }

    /// Finishes every event stream: nothing more will happen.
    func finish() {
        let subscribers = state.withLock { state in
            state.closed = true
            defer { state.subscribers.removeAll() }
            return Array(state.subscribers.values)
        }
        for subscriber in subscribers { subscriber.finish() }
    }
}
