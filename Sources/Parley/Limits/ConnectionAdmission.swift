import Logging
import NIOCore
import ParleyWire
import Synchronization

/// Counts the connections the listeners hold, in all and per remote IP address, and refuses a connection that
/// would exceed a limit as it is accepted, before any of its bytes are read. The TCP listener and the control
/// socket are counted apart, so that a flood from the LAN cannot lock out local tools; control-socket clients
/// have no address and are not counted per address. Connections this node dials are not counted: it chose them.
final class ConnectionAdmission: Sendable {
    /// The limit a refused connection ran into.
    enum Limit: Sendable, Hashable, CustomStringConvertible {
        case total(Int)
        case perAddress(Int, address: String)
        case pending(Int)
        case pendingPerAddress(Int, address: String)

        var description: String {
            switch self {
            case .total(let maximum): "maximumConnections=\(maximum)"
            case .perAddress(let maximum, _): "maximumConnectionsPerAddress=\(maximum)"
            case .pending(let maximum): "maximumPendingConnections=\(maximum)"
            case .pendingPerAddress(let maximum, _): "maximumPendingConnectionsPerAddress=\(maximum)"
            }
        }

        /// What the refused peer is told in its close frame.
        var reason: String {
            switch self {
            case .total(let maximum): "too many connections: this node holds its maximum of \(maximum)"
            case .perAddress(let maximum, let address): "too many connections from \(address): this node accepts at most \(maximum) per address"
            case .pending(let maximum): "too many connections completing their handshake: this node holds its maximum of \(maximum)"
            case .pendingPerAddress(let maximum, let address):
                "too many connections from \(address) completing their handshake: this node accepts at most \(maximum) per address"
            }
        }
    }

    /// An admitted connection: whether its handshake clock starts now (the pending pool is under pressure) rather
    /// than at its first byte.
    struct Admitted: Sendable {
        var handshakeClockStartsAtAccept: Bool
    }

    /// A connection that has not completed its handshake.
    private struct Pending {
        var channel: any Channel
        var address: String?
        var order: UInt64
        var acceptedAt: NIODeadline
        var silent = true
    }

    /// How long a connection may stay silent before it can be closed to make room: a burst of peers connecting
    /// at once has not had the time to send its hellos.
    static let silentGrace = TimeAmount.seconds(1)

    private struct State {
        var network = 0
        var local = 0
        var perAddress: [String: Int] = [:]
        /// Refused connections still open (waiting for their first byte, or for the refusal to be read).
        var refusing = 0
        var pending: [ObjectIdentifier: Pending] = [:]
        var pendingPerAddress: [String: Int] = [:]
        var nextOrder: UInt64 = 0

        mutating func removePending(_ key: ObjectIdentifier) {
            guard let gone = pending.removeValue(forKey: key), let address = gone.address else { return }
            let remaining = pendingPerAddress[address, default: 1] - 1
            pendingPerAddress[address] = remaining > 0 ? remaining : nil
        }
    }

    private let maximumConnections: Int?
    private let maximumPerAddress: Int?
    private let maximumPending: Int?
    private let maximumPendingPerAddress: Int?
    /// Refused connections kept open at once to be told why; beyond that they are closed without a word, so
    /// that a flood of connections costs no more than the accepts.
    private let maximumRefusing: Int
    private let firstByteTimeout: TimeAmount
    private let logger: Logger
    private let logThrottle: LogThrottle
    private let counters: StatisticsCounters
    private let state = Mutex(State())

    init(configuration: TransceiverConfiguration, counters: StatisticsCounters, logThrottle: LogThrottle) {
        maximumConnections = configuration.maximumConnections
        maximumPerAddress = configuration.maximumConnectionsPerAddress
        maximumPending = configuration.maximumPendingConnections
        maximumPendingPerAddress = configuration.maximumPendingConnectionsPerAddress ?? configuration.maximumConnectionsPerAddress
        maximumRefusing = max(64, configuration.maximumConnections ?? 256)
        firstByteTimeout = TimeAmount(configuration.handshakeTimeout)
        logger = configuration.logger
        self.logThrottle = logThrottle
        self.counters = counters
    }

    /// Called from a listener's child initializer, on the new channel's event loop, before anything is read.
    /// Returns the admission if the connection is admitted; it is then counted until it closes (and, from the
    /// network, held in the pending pool until ``established(_:)``). A refused connection is set up to be told
    /// why (see ``RefusalHandler``) and must get no other handler.
    func admit(_ channel: any Channel) throws -> Admitted? {
        let local = channel.isLocalSocket
        let address = local ? nil : channel.remoteAddress.flatMap(Self.addressKey)
        let key = ObjectIdentifier(channel)
        let decision = state.withLock { state -> (refusal: (Limit, answer: Bool)?, evicted: (any Channel)?, underPressure: Bool) in
            // The connection limits count connections that completed their handshake; the others have the pending
            // pool, so that they can never refuse a peer that proved who it is.
            let held = local ? state.local : state.network - state.pending.count
            var limit: Limit?
            var evict: ObjectIdentifier?
            if let maximum = maximumConnections, held >= maximum {
                limit = .total(maximum)
            } else if let address, let maximum = maximumPerAddress,
                state.perAddress[address, default: 0] - state.pendingPerAddress[address, default: 0] >= maximum
            {
                limit = .perAddress(maximum, address: address)
            } else if !local, let address, let maximum = maximumPendingPerAddress, state.pendingPerAddress[address, default: 0] >= maximum {
                limit = .pendingPerAddress(maximum, address: address)
            } else if !local, let maximum = maximumPending, state.pending.count >= maximum {
                // Room is made by the oldest connection that has not said a word; one that is mid-handshake stays.
                let now = channel.eventLoop.now
                evict = state.pending.filter { $0.value.silent && now - $0.value.acceptedAt >= Self.silentGrace }
                    .min { $0.value.order < $1.value.order }?.key
                if evict == nil { limit = .pending(maximum) }
            }
            guard let limit else {
                let evicted = evict.flatMap { state.pending[$0]?.channel }
                if let evict { state.removePending(evict) }
                if local { state.local += 1 } else { state.network += 1 }
                if let address { state.perAddress[address, default: 0] += 1 }
                var underPressure = false
                if !local {
                    state.nextOrder += 1
                    state.pending[key] = Pending(channel: channel, address: address, order: state.nextOrder, acceptedAt: channel.eventLoop.now)
                    if let address { state.pendingPerAddress[address, default: 0] += 1 }
                    underPressure = maximumPending.map { state.pending.count * 2 > $0 } ?? false
                }
                return (nil, evicted, underPressure)
            }
            let answer = state.refusing < maximumRefusing
            if answer { state.refusing += 1 }
            return ((limit, answer), nil, false)
        }
        if let evicted = decision.evicted {
            counters.silentConnectionsClosed.add(1, ordering: .relaxed)
            logThrottle.warning(
                "pending connections full: closed the oldest one that never sent a byte, to make room",
                metadata: ["remote": "\(evicted.remoteAddress.map(PeerConnection.describe) ?? "unknown")", "limit": "maximumPendingConnections=\(maximumPending ?? 0)"],
                to: logger
            )
            evicted.close(promise: nil)
        }
        guard let (limit, answer) = decision.refusal else {
            channel.closeFuture.whenComplete { _ in self.release(local: local, address: address, key: key) }
            return Admitted(handshakeClockStartsAtAccept: decision.underPressure)
        }
        counters.connectionsRefused.add(1, ordering: .relaxed)
        log(limit, remote: channel.remoteAddress, address: address)
        guard answer else {
            channel.close(promise: nil)
            return nil
        }
        channel.closeFuture.whenComplete { _ in self.state.withLock { $0.refusing -= 1 } }
        try channel.pipeline.syncOperations.addHandler(
            RefusalHandler(closeFrame: CloseFrame(code: .tooManyConnections, message: limit.reason), firstByteTimeout: firstByteTimeout)
        )
        return nil
    }

    /// The connection has sent its first bytes: it is no longer one to close to make room.
    func spoke(_ channel: any Channel) {
        state.withLock { $0.pending[ObjectIdentifier(channel)]?.silent = false }
    }

    /// The connection completed its handshake: it leaves the pending pool.
    func established(_ channel: any Channel) {
        state.withLock { $0.removePending(ObjectIdentifier(channel)) }
    }

    /// Connections that have not completed their handshake, now.
    var pendingCount: Int { state.withLock { $0.pending.count } }

    /// Connections held now: accepted from the network, and on the control socket.
    var held: (network: Int, local: Int) { state.withLock { ($0.network, $0.local) } }

    private func release(local: Bool, address: String?, key: ObjectIdentifier) {
        state.withLock { state in
            state.removePending(key)
            if local { state.local -= 1 } else { state.network -= 1 }
            guard let address else { return }
            let remaining = state.perAddress[address, default: 1] - 1
            state.perAddress[address] = remaining > 0 ? remaining : nil
        }
    }

    /// One line per refusal, throttled: a flood of connections must not become a flood of logs.
    private func log(_ limit: Limit, remote: SocketAddress?, address: String?) {
        var metadata: Logger.Metadata = [
            "remote": "\(remote.map(PeerConnection.describe) ?? "unknown")",
            "limit": "\(limit)",
        ]
        // The address as counted: a dual-stack listener sees IPv4 peers as ::ffff:a.b.c.d.
        if let address { metadata["address"] = "\(address)" }
        logThrottle.warning("connection refused: too many connections", metadata: metadata, to: logger)
    }

    /// The remote IP address, with an IPv4 address seen through a dual-stack listener (`::ffff:a.b.c.d`) in its
    /// plain form, so that one host is one key.
    static func addressKey(_ address: SocketAddress) -> String? { address.plainIPAddress }
}
