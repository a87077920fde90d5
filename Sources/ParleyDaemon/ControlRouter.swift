import Foundation
import Logging
import NIOCore
import Parley
import ParleyControl
import Synchronization

/// parleyd's half of the control protocol (see ``Control`` and ``RoutedType``): answers `parley.control.*`
/// requests from local clients and routes messages between local clients and LAN peers without ever decoding
/// or re-encoding a payload.
final class ControlRouter: Sendable {
    /// How long a forwarded request waits for the LAN peer's reply.
    static let forwardedRequestTimeout = Duration.seconds(60)

    private let transceiver: Transceiver
    private let logger: Logger
    private let started = ContinuousClock.now
    private let configuration: DaemonConfiguration
    /// Local client → the types it subscribed to (empty: every type).
    private let subscriptions = Mutex<[PeerID: Set<String>]>([:])
    /// Set once the web debugger listens (`parleyctl web`, `parleyctl status`).
    let webURL = Mutex<String?>(nil)
    /// Set once the OTLP receiver listens (`parleyctl otel-env`).
    let otlpEndpoint = Mutex<String?>(nil)
    /// Where local clients' routed types went, while the peers stay the same: a stream of messages to one peer
    /// parses its `@target/Type` and selects among the peers once, not per message.
    private let routes = Mutex(RouteCache())

    private struct RouteCache {
        /// The transceiver's ``Transceiver/peersVersion`` the routes were computed under.
        var version: UInt64 = .max
        var routes: [String: Route] = [:]
        /// A client that makes up a new type name per message must not grow the cache without bound.
        static let capacity = 1024
    }

    private struct Route {
        var routed: RoutedType
        var targets: [Peer]
    }

    init(transceiver: Transceiver, configuration: DaemonConfiguration, logger: Logger) {
        self.transceiver = transceiver
        self.configuration = configuration
        self.logger = logger
    }

    /// The LAN peers connected and those known from discovery but not connected, ordered by id, each with the
    /// domain discovery found it in.
    func peerList() -> [Control.PeerInfo] {
        let ownID = transceiver.localPeerID?.rawValue
        // TXT ids are normalised the way handshake ids are (lowercase UUIDs); anything else is not a Parley peer.
        let services = transceiver.discoveredServices.compactMap { service in
            service.peerID.flatMap(PeerID.init(rawValue:)).map { (id: $0.rawValue, service: service) }
        }.filter { $0.id != ownID }
        let domains = Dictionary(services.map { ($0.id, $0.service.domain) }, uniquingKeysWith: { first, _ in first })
        let connected = lanPeers().map { peer in
            var info = Control.PeerInfo(peer, counts: transceiver.messageCounts(for: peer.id) ?? (0, 0))
            info.domain = domains[info.id]
            return info
        }
        var seen = Set(connected.map(\.id))
        // Known but not connected: Parley services seen advertised (not this node itself) without a connection.
        let known = services.filter { seen.insert($0.id).inserted }.map { id, service in
            var info = Control.PeerInfo(discovered: service)
            info.id = id
            return info
        }
        return (connected + known).sorted { $0.id < $1.id }
    }

    /// Registers the control handlers and the router. Call before the transceiver starts.
    func install(reload: @escaping @Sendable () async throws -> Control.ReloadResult) {
        transceiver.respond(to: Control.Peers.self, localOnly: true) { [self] request, _ in
            Control.PeerList.page(of: peerList(), for: request)
        }
        transceiver.respond(to: Control.WaitForPeer.self, localOnly: true) { [self] request, peer in
            let wanted = request.wanted
            let found = try await ControlRefusal.coding {
                try await transceiver.waitForPeer(
                    timeout: .milliseconds(max(0, request.timeoutMilliseconds)), description: wanted.description,
                    matching: { candidate in
                        !candidate.isLocal && wanted.matches(id: candidate.id.rawValue, name: candidate.name, accepts: candidate.accepts)
                    }
                )
            }
            return Control.PeerInfo(found, counts: transceiver.messageCounts(for: found.id) ?? (0, 0))
        }
        transceiver.respond(to: Control.Status.self, localOnly: true) { [self] _, peer in
            let discovery = transceiver.discoveryStatus
            let advertised: String? = if case .running(let name) = discovery { name } else { nil }
            return Control.StatusReport(
                name: configuration.name,
                peerID: transceiver.localPeerID?.rawValue ?? "",
                port: transceiver.listeningPort ?? configuration.port,
                discovery: discovery.description,
                advertisedName: advertised,
                peerCount: lanPeers().count,
                uptimeSeconds: Double((ContinuousClock.now - started).components.seconds),
                version: Parleyd.version,
                webURL: webURL.withLock { $0 },
                fingerprint: transceiver.configuration.devices?.identity.fingerprint.full
            )
        }
        transceiver.respond(to: Control.OTLPEndpoint.self, localOnly: true) { [self] _, _ in
            let endpoint = otlpEndpoint.withLock { $0 }
            // The receiver asks every export for the token whenever parleyd has one (OTLPAccess), loopback or not.
            return Control.OTLPEndpointReport(endpoint: endpoint, token: endpoint == nil ? nil : configuration.webToken)
        }
        transceiver.respond(to: Control.Subscribe.self, localOnly: true) { [self] request, peer in
            subscriptions.withLock { $0[peer.id] = Set(request.types) }
            logger.debug("local client subscribed", metadata: ["peer-id": "\(peer.id)", "types": "\(request.types.sorted())"])
            return Control.OK()
        }
        transceiver.respond(to: Control.Reload.self, localOnly: true) { _, peer in
            return try await ControlRefusal.coding { try await reload() }
        }
        transceiver.routeUnhandled(immediately: forwardImmediately, otherwise: forwardUnhandled)
    }

    /// The common case of forwarding, done on the spot for a run of one-way messages of one type: to one peer
    /// whose queue has room — a local client's messages to the one LAN peer they name, or a LAN peer's to its one
    /// subscribed local client — or to every peer a local client's broadcast names when all of them have room; all
    /// of the run at once, with one route and one queueing per peer. Anything else, and any failure, is left to
    /// ``forwardUnhandled(_:from:)``, which has every rule and error: it is the same forwarding, without the async
    /// calls that cost more than the queueing (docs/performance.md).
    private func forwardImmediately(_ run: ArraySlice<InboundMessage>, from peer: Peer) -> Int {
        guard let first = run.first else { return 0 }
        let typeName: String
        let target: PeerID
        if peer.isLocal {
            guard let (routed, targets) = try? route(first.typeName), !targets.isEmpty else { return 0 }
            if targets.count > 1 || routed.target == RoutedType.everyPeer {
                // A broadcast: to every target at once when all have room, else message by message with the
                // broadcast rules (a full queue waited for, a stalled reader dropped) in forwardUnhandled.
                let payloads = run.map(\.payload)
                guard (try? transceiver.broadcastRawIfRoom(typeName: routed.typeName, payloads: payloads, among: targets.map(\.id))) != nil
                else { return 0 }
                return run.count
            }
            (typeName, target) = (routed.typeName, targets[0].id)
        } else {
            let wanted = subscribers(of: first.typeName)
            guard wanted.count == 1 else { return 0 }
            (typeName, target) = (RoutedType(from: peer.id, typeName: first.typeName).wireName, wanted[0])
        }
        return (try? transceiver.sendRawIfRoom(typeName: typeName, payloads: run.map(\.payload), to: target)) ?? 0
    }

    /// A message no handler of parleyd's own takes: a local client's goes out to the LAN, a LAN peer's to the local
    /// clients subscribed. Runs where its caller runs (the connection's event loop): it only looks up and queues,
    /// and a hop to the global executor and back cost more than the forwarding itself (docs/performance.md).
    /// Inlined into the handler given to the transceiver, which is then one async call instead of two.
    @inline(__always)
    private nonisolated(nonsending) func forwardUnhandled(
        _ message: InboundMessage, from peer: Peer
    ) async throws -> (typeName: String, payload: ByteBuffer)? {
        if peer.isLocal {
            return try await forwardFromLocal(message, client: peer).map { ($0.typeName, $0.payload) }
        }
        // Nobody subscribed: to the sender this is a type nobody handles, as it would be without parleyd.
        guard await forwardToSubscribers(message, from: peer) else { throw UnhandledMessage() }
        return nil
    }

    /// Ends the subscription of a local client that disconnected.
    func clientDisconnected(_ peer: Peer) {
        guard peer.isLocal else { return }
        _ = subscriptions.withLock { $0.removeValue(forKey: peer.id) }
    }

    // MARK: - Routing

    /// A local client's `@<target>/<Type>`: a request goes to its one target and the reply comes back as it is;
    /// a one-way message goes to every target.
    private nonisolated(nonsending) func forwardFromLocal(_ message: InboundMessage, client: Peer) async throws -> InboundMessage? {
        let (routed, targets) = try route(message.typeName)
        guard !targets.isEmpty else {
            throw RoutingError.noMatchingPeer(routed.target, connected: lanPeers())
        }
        if message.expectsReply {
            guard targets.count == 1 else { throw RoutingError.severalTargets(routed.target, targets) }
            logger.debug(
                "forwarding request",
                metadata: ["type": "\(routed.typeName)", "from-peer-id": "\(client.id)", "to-peer-id": "\(targets[0].id)"]
            )
            return try await transceiver.requestRaw(
                typeName: routed.typeName, payload: message.payload, from: targets[0].id, timeout: Self.forwardedRequestTimeout,
                for: client.id
            )
        }
        // One named target: the client waits while that peer's queue is full (backpressure). `*` or several
        // matches: broadcast rules (docs/protocol.md §10), so that one stalled reader cannot hold up the others.
        var failures: [ForwardingFailure] = []
        if targets.count == 1 && routed.target != RoutedType.everyPeer {
            do {
                try await transceiver.sendRaw(typeName: routed.typeName, payload: message.payload, to: targets[0].id)
            } catch {
                failures.append(ForwardingFailure(peer: targets[0], cause: .sendFailed(error)))
            }
        } else {
            let reached = Set(
                try await transceiver.broadcastRaw(typeName: routed.typeName, payload: message.payload, among: targets.map(\.id))
            )
            failures = targets.filter { !reached.contains($0.id) }.map { ForwardingFailure(peer: $0, cause: .notReached) }
        }
        if !failures.isEmpty { throw RoutingError.sendFailed(routed.typeName, failures) }
        return nil
    }

    /// The routed type of a local client's message and the peers it selects, from the cache while the peers have
    /// not changed.
    private func route(_ wireName: String) throws -> (RoutedType, targets: [Peer]) {
        // Read before the peers: if they change meanwhile, what is stored below is stale at once, never wrong.
        let version = transceiver.peersVersion
        if let cached = routes.withLock({ $0.version == version ? $0.routes[wireName] : nil }) {
            return (cached.routed, cached.targets)
        }
        guard let routed = RoutedType(parsing: wireName) else { throw RoutingError.notRouted(wireName) }
        let targets = PeerSelector.select(routed.target, among: lanPeers(), id: \.id.rawValue, name: \.name)
        routes.withLock { cache in
            if cache.version != version || cache.routes.count >= RouteCache.capacity {
                cache = RouteCache(version: version)
            }
            cache.routes[wireName] = Route(routed: routed, targets: targets)
        }
        return (routed, targets)
    }

    /// A LAN message nothing handles: to every local client subscribed to its type (or to all types), as
    /// `@<sender id>/<Type>`.
    /// Returns false when no local client wanted it.
    private nonisolated(nonsending) func forwardToSubscribers(_ message: InboundMessage, from sender: Peer) async -> Bool {
        let wanted = subscribers(of: message.typeName)
        guard !wanted.isEmpty else {
            logger.debug("no local client subscribed", metadata: ["type": "\(message.typeName)", "peer-id": "\(sender.id)"])
            return false
        }
        let typeName = RoutedType(from: sender.id, typeName: message.typeName).wireName
        // Concurrently, and each bounded: a local client that stops reading must not hold up the others, nor the
        // LAN peer's further messages (which wait behind this handler). One that takes nothing of its full queue for
        // the slow-peer timeout is unsubscribed; one that reads slowly only slows the forwarding down.
        let patience = transceiver.configuration.slowPeerTimeout
        @Sendable func forward(to client: PeerID) async {
            do {
                try await transceiver.sendRaw(typeName: typeName, payload: message.payload, to: client, stallTimeout: patience)
            } catch {
                _ = subscriptions.withLock { $0.removeValue(forKey: client) }
                logger.warning(
                    "local client not taking forwarded messages; unsubscribed",
                    metadata: ["peer-id": "\(client)", "type": "\(message.typeName)", "reason": "\(error)"]
                )
            }
        }
        // The usual case, one subscriber, needs no child task.
        if wanted.count == 1 {
            await forward(to: wanted[0])
            return true
        }
        await withTaskGroup(of: Void.self) { group in
            for client in wanted { group.addTask { await forward(to: client) } }
        }
        return true
    }

    /// The local clients subscribed to `typeName` (or to every type).
    private func subscribers(of typeName: String) -> [PeerID] {
        subscriptions.withLock { subscriptions in
            subscriptions.compactMap { client, types in types.isEmpty || types.contains(typeName) ? client : nil }
        }
    }

    /// The connected peers that are not local clients.
    private func lanPeers() -> [Peer] {
        transceiver.peers.filter { !$0.isLocal }.sorted { $0.connectedAt < $1.connectedAt }
    }
}

/// Why parleyd refused to route a message; the text is what the requester receives in the error reply.
enum RoutingError: Error, CustomStringConvertible {
    case notRouted(String)
    case noMatchingPeer(String, connected: [Peer])
    case severalTargets(String, [Peer])
    case sendFailed(String, [ForwardingFailure])

    var description: String {
        switch self {
        case .notRouted(let type):
            "\"\(type)\" is not routed: a local client's message needs a type name @<peer id, id prefix, name or *>/<Type>"
        case .noMatchingPeer(let target, let connected):
            "no connected peer matches \"\(target)\""
                + (connected.isEmpty
                    ? " (no LAN peer is connected)"
                    : "; connected: " + connected.map(\.label).joined(separator: ", "))
        case .severalTargets(let target, let peers):
            "\"\(target)\" matches \(peers.count) peers (\(peers.map(\.label).joined(separator: ", "))); a request needs exactly one: give a peer id"
        case .sendFailed(let type, let failures):
            "could not forward \(type) to \(failures.map(\.description).joined(separator: "; "))"
        }
    }
}

/// Why a routed message did not reach one of its targets.
struct ForwardingFailure: Error, CustomStringConvertible {
    enum Cause {
        /// The send to the one target failed: not connected any more, its queue stalled, the message too large.
        case sendFailed(any Error)
        /// A broadcast did not reach it: it disconnected meanwhile, or was dropped as too slow.
        case notReached
    }

    let peer: Peer
    let cause: Cause

    var description: String {
        switch cause {
        case .sendFailed(let error): "\(peer.label): \(error)"
        case .notReached: "\(peer.label): disconnected meanwhile, or dropped as too slow"
        }
    }
}
