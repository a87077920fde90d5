import Foundation
import Logging
import ParleyDiscovery
import ParleyWire

extension Transceiver {
    /// Services of the configured type currently seen on the network (including this node's own), by instance name.
    public var discoveredServices: [DiscoveredService] {
        lifecycle.withLock { $0.discovery }?.services ?? []
    }

    /// Whether discovery is off, running (and under which name this node is advertised), or waiting for its daemon.
    public var discoveryStatus: DiscoveryStatus {
        lifecycle.withLock { $0.discovery }?.status ?? .off
    }

    /// Returns once discovery has settled — advertised (or browsing), or its daemon reported unavailable — or at
    /// once when discovery is off. parleyd reports READY after this.
    public func discoverySettled() async -> DiscoveryStatus {
        guard let discovery = lifecycle.withLock({ $0.discovery }) else { return .off }
        return await discovery.settled()
    }

    /// Sets (or, with nil, removes) an entry of this node's TXT record beside Parley's own, for what is known only
    /// once the transceiver runs (a port another server bound); peers browsing see the service updated, not
    /// removed and added again. Entries known before the start go in ``DiscoveryConfiguration/extraTXT``.
    ///
    /// Does nothing while discovery is off, not yet started, or not advertising. Throws ``DiscoveryError`` for a key
    /// of Parley's own (`reservedTXTKey`) or a record that would pass its 200 bytes, and the advertisement stays as
    /// it was.
    public func setAdvertisedTXT(_ value: String?, forKey key: String) throws {
        try lifecycle.withLock { $0.discovery }?.setExtraTXT(value, forKey: key)
    }

    /// Starts the configured backend: advertise the listener, browse the type. A missing daemon is not an error
    /// here: discovery reports it and keeps waiting for the daemon, and static peers work meanwhile.
    func startDiscovery(
        _ settings: DiscoveryConfiguration, localID: PeerID, port: Int?, network: NetworkMonitor?
    ) throws -> DiscoveryCoordinator {
        let coordinator = DiscoveryCoordinator(
            backend: settings.backend.makeBackend(logger: logger),
            settings: .init(
                configuration: settings, localID: localID, displayName: configuration.name, port: port,
                requiresSecret: configuration.sharedSecret != nil,
                deviceFingerprint: configuration.devices?.identity.fingerprint.short, network: network
            ),
            logger: logger, logThrottle: logThrottle
        )
        do {
            try coordinator.start()
        } catch {
            coordinator.stop()
            throw error
        }
        return coordinator
    }

    /// Tries a discovered service's addresses in order until one connects; returns the connected peer's id.
    func dial(_ service: DiscoveredService) async -> PeerID? {
        var failures: [String] = []
        let advertised = service.peerID.flatMap(PeerID.init(rawValue:))
        for address in service.addresses {
            let endpoint = Endpoint(host: address.connectHost, port: Int(service.port))
            do {
                return try await connect(to: endpoint, expecting: advertised).id
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

    /// Closes, on every network change, the connections whose local address is gone (an address changed, an
    /// interface went away) or whose interface is down: nothing can travel on them any more, and the peer is
    /// dialled again at once instead of after the heartbeat timeout.
    func closeConnectionsOnNetworkLoss(_ network: NetworkMonitor) async {
        for await snapshot in network.changes() {
            for connection in registry.connections {
                guard let local = connection.channel.localAddress, local.protocol != .unix,
                    let host = local.plainIPAddress
                else { continue }
                // A connection whose address is gone, or whose interface is down or lost its carrier (a cable
                // pulled, Wi-Fi dropped, a laptop asleep), carries nothing any more; closed now, its peer is
                // dialled again (on another interface, or on this one once it is back) instead of waiting for the
                // heartbeat to give up.
                let interface = snapshot.interface(holding: host)
                let gone: TransportFailure
                switch interface {
                case nil: gone = .localAddressGone(host: host)
                case let interface? where !interface.isUp: gone = .interfaceDown(name: interface.name)
                default: continue
                }
                logger.info(
                    "network change: closing a connection that can no longer carry anything",
                    metadata: ["why": "\(gone)", "peer": "\(connection.peer?.name ?? "?")"])
                connection.noteEnd(.transportFailed(gone))
                connection.channel.close(promise: nil)
            }
        }
    }
}
