import Foundation
import Logging
import ParleyDiscovery
import ParleyWire

extension Transceiver {
    /// Services of the configured type currently seen on the LAN (including this node's own), by instance name.
    public var discoveredServices: [DiscoveredService] {
        state.withLock { Array($0.services.values) }.sorted { $0.instanceName < $1.instanceName }
    }

    /// Whether discovery is off, running (and under which name this node is advertised), or waiting for avahi-daemon.
    public var discoveryStatus: DiscoveryStatus { state.withLock { $0.discoveryStatus } }

    /// Starts Avahi discovery: advertise the listener, browse the type. A missing avahi-daemon is not an error
    /// here: discovery reports it, keeps waiting for the daemon, and static peers work meanwhile.
    func startDiscovery(_ settings: DiscoveryConfiguration, localID: PeerID, port: Int?) throws -> AvahiDiscovery {
        let type = try ServiceType(settings.serviceType)
        let discovery = AvahiDiscovery(logger: logger)
        try discovery.start()
        if settings.advertise, let port {
            try discovery.advertise(
                Advertisement(
                    instanceName: settings.instanceName ?? Advertisement.defaultInstanceName,
                    type: type, subtypes: settings.subtypes, port: UInt16(port),
                    txt: .parley(
                        peerID: localID.rawValue, displayName: configuration.name,
                        protocolVersion: Int(ProtocolVersion.current), requiresSecret: configuration.sharedSecret != nil
                    )
                )
            )
        }
        discovery.browse(type)
        state.withLock {
            $0.discovery = discovery
            $0.discoveryStatus = .starting
        }
        return discovery
    }

    /// Follows discovery events until discovery stops: keeps the service list, and keeps one task per admitted
    /// service that connects to it and reconnects while it is advertised.
    func runDiscovery(_ discovery: AvahiDiscovery, settings: DiscoveryConfiguration, localID: PeerID) async {
        await withDiscardingTaskGroup { group in
            for await event in discovery.events {
                switch event {
                case .found(let service), .updated(let service):
                    let isNew = state.withLock { state in
                        defer { state.services[service.instanceName] = service }
                        return state.services[service.instanceName] == nil
                    }
                    let isOwn = service.peerID == localID.rawValue
                    if isNew && !isOwn {
                        logger.info(
                            "discovered peer service",
                            metadata: [
                                "instance": "\(service.instanceName)", "host": "\(service.hostName)",
                                "port": "\(service.port)", "peer-id": "\(service.peerID ?? "none")",
                            ]
                        )
                    }
                    guard !isOwn, settings.autoConnect.admits(service) else { continue }
                    let claimed = state.withLock { $0.dialing.insert(service.instanceName).inserted }
                    if claimed {
                        group.addTask {
                            await self.maintainDiscoveredPeer(named: service.instanceName)
                            _ = self.state.withLock { $0.dialing.remove(service.instanceName) }
                        }
                    }
                case .removed(let name, _):
                    let removed = state.withLock { $0.services.removeValue(forKey: name) }
                    if let removed, removed.peerID != localID.rawValue {
                        logger.info("peer service withdrawn", metadata: ["instance": "\(name)"])
                    }
                case .advertised(let name):
                    state.withLock { $0.discoveryStatus = .running(advertisedAs: name) }
                    logger.info("advertised on the LAN", metadata: ["instance": "\(name)"])
                case .renamed(let from, let to):
                    state.withLock { $0.discoveryStatus = .running(advertisedAs: to) }
                    logger.notice(
                        "service name already taken on the LAN; advertising under Avahi's alternative name",
                        metadata: ["requested": "\(from)", "instance": "\(to)"]
                    )
                case .advertisementFailed(let error):
                    logger.error("advertisement failed; peers will not find this node", metadata: ["error": "\(error)"])
                case .daemonUnavailable(let reason):
                    state.withLock { $0.discoveryStatus = .daemonUnavailable(reason) }
                case .daemonAvailable:
                    state.withLock { state in
                        if case .running = state.discoveryStatus {} else { state.discoveryStatus = .running(advertisedAs: nil) }
                    }
                }
            }
        }
    }

    /// Connects to a discovered service and reconnects with backoff while it stays advertised.
    private func maintainDiscoveredPeer(named name: String) async {
        var backoff = Backoff()
        // The id the handshake gave us; the TXT record's id may be missing (a `.matching` policy admits such
        // services) or stale, and must not make us redial a peer that is connected.
        var connectedID: PeerID?
        while isRunning, let service = state.withLock({ $0.services[name] }) {
            // When both sides discover each other at once both dial; the peer table keeps one connection (the
            // one dialled by the smaller id) on both sides, so racing costs one short-lived duplicate, not a delay.
            let knownID = connectedID ?? service.peerID.flatMap(PeerID.init(rawValue:))
            if let knownID, isConnected(knownID) {
                backoff.reset()
                await pause(.milliseconds(250))
                continue
            }
            if let peer = await dial(service) {
                connectedID = peer
                backoff.reset()
            } else {
                await pause(backoff.delay())
            }
        }
    }

    /// Tries the service's addresses in order until one connects; returns the connected peer's id.
    private func dial(_ service: DiscoveredService) async -> PeerID? {
        var failures: [String] = []
        for address in service.addresses {
            let endpoint = Endpoint(host: address.connectHost, port: Int(service.port))
            do {
                return try await connect(to: endpoint).id
            } catch {
                failures.append("\(endpoint): \(error)")
            }
        }
        logger.info(
            "cannot reach discovered peer; will retry while it is advertised",
            metadata: ["instance": "\(service.instanceName)", "attempts": "\(failures.joined(separator: "; "))"]
        )
        return nil
    }

    /// Keeps a configured static peer connected, with backoff, for as long as the transceiver runs.
    func maintainStaticPeer(_ endpoint: Endpoint) async {
        var backoff = Backoff()
        var peer: PeerID?
        while isRunning {
            if let peer, isConnected(peer) {
                backoff.reset()
                await pause(.milliseconds(250))
                continue
            }
            do {
                peer = try await connect(to: endpoint).id
                backoff.reset()
            } catch {
                logger.info("static peer unreachable; retrying", metadata: ["endpoint": "\(endpoint)", "error": "\(error)"])
                await pause(backoff.delay())
            }
        }
    }

    var isRunning: Bool {
        state.withLock { if case .running = $0.lifecycle { true } else { false } }
    }

    private func isConnected(_ peer: PeerID) -> Bool {
        state.withLock { $0.table.connection(for: peer) != nil }
    }

    private func pause(_ duration: Duration) async {
        try? await Task.sleep(for: duration)
    }
}
