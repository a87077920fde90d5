import Logging
import ParleyDiscovery
import Synchronization

/// Turns what a ``DiscoveryBackend`` sees into connections: advertises this node, keeps the list of services of its
/// type, and keeps one dialling loop per admitted service for as long as it is advertised.
///
/// A loop dials the service's addresses in order; once connected it waits, without polling, until the registry
/// reports that peer gone, then dials again; after a failed attempt it waits a jittered backoff. Written against the
/// backend protocol and two closures (dial, wait for a departure), so that tests drive it with a scripted backend
/// and no sockets.
final class DiscoveryCoordinator: Sendable {
    struct Settings: Sendable {
        var configuration: DiscoveryConfiguration
        var localID: PeerID
        var displayName: String
        var port: Int?
        var requiresSecret: Bool
        /// The short form of this node's device fingerprint, when it accepts devices over TLS.
        var deviceFingerprint: String? = nil
        /// Where interface changes come from; nil: advertise on every interface the backend uses and never look.
        var network: NetworkMonitor? = nil
    }

    /// Dials one service; returns the connected peer's id, nil when no address answered.
    typealias Dial = @Sendable (DiscoveredService) async -> PeerID?
    /// Returns once the peer is no longer connected.
    typealias WaitForDeparture = @Sendable (PeerID) async -> Void

    private struct State {
        var services: [DiscoveredService.ID: DiscoveredService] = [:]
        var status = DiscoveryStatus.starting
        /// Services that have a dialling loop.
        var dialing: Set<DiscoveredService.ID> = []
        var statusWaiters: [CheckedContinuation<DiscoveryStatus, Never>] = []
        /// Wakes a dialling loop waiting out its backoff: the service changed (new address, new port), or the
        /// network did.
        var wakeups: [DiscoveredService.ID: CheckedContinuation<Void, Never>] = [:]
        /// What is advertised, with the interfaces it was last published on.
        var advertisement: Advertisement?
    }

    let backend: any DiscoveryBackend
    private let settings: Settings
    private let logger: Logger
    private let state = Mutex(State())
    private let makeBackoff: @Sendable () -> Backoff
    private let throttle: LogThrottle
    /// Held while the advertisement is handed to the backend, so that of two changes made at once (a network change,
    /// a TXT entry) the backend is given the later state last.
    private let publishing = Mutex(())

    init(
        backend: any DiscoveryBackend, settings: Settings, logger: Logger, logThrottle: LogThrottle = LogThrottle(),
        makeBackoff: @escaping @Sendable () -> Backoff = { Backoff() }
    ) {
        self.throttle = logThrottle
        self.backend = backend
        self.settings = settings
        self.logger = logger
        self.makeBackoff = makeBackoff
    }

    /// The services whose dialling loop is waiting out a backoff (for tests: the loop's state is not otherwise
    /// visible).
    var waitingOutBackoff: Set<DiscoveredService.ID> { state.withLock { Set($0.wakeups.keys) } }

    /// Services of the configured type currently seen (including this node's own), by instance name and domain.
    var services: [DiscoveredService] {
        state.withLock { Array($0.services.values) }.sorted { ($0.instanceName, $0.domain) < ($1.instanceName, $1.domain) }
    }

    var status: DiscoveryStatus { state.withLock { $0.status } }

    /// Returns once the backend has answered one way or the other: advertised (or browsing, when not advertising)
    /// or unavailable. parleyd reports READY after this, so that a unit ordered after it finds it on the LAN.
    func settled() async -> DiscoveryStatus {
        await withCheckedContinuation { continuation in
            let now = state.withLock { state -> DiscoveryStatus? in
                if Self.isSettled(state.status) { return state.status }
                state.statusWaiters.append(continuation)
                return nil
            }
            if let now { continuation.resume(returning: now) }
        }
    }

    private static func isSettled(_ status: DiscoveryStatus) -> Bool {
        if case .starting = status { return false }
        return true
    }

    /// Starts the backend, advertises (when configured) and browses.
    func start() throws {
        let configuration = settings.configuration
        let type = try ServiceType(configuration.serviceType)
        try backend.start()
        if configuration.advertise, let port = settings.port {
            var txt = TXTRecord.parley(
                peerID: settings.localID.rawValue, displayName: settings.displayName,
                protocolVersion: Int(ProtocolVersion.current), requiresSecret: settings.requiresSecret,
                deviceFingerprint: settings.deviceFingerprint
            )
            for entry in configuration.extraTXT.entries {
                guard !TXTRecord.ParleyKey.isReserved(entry.key) else { throw DiscoveryError.reservedTXTKey(entry.key) }
                txt.setValue(entry.value, forKey: entry.key)
            }
            var advertisement = Advertisement(
                instanceName: configuration.instanceName ?? Advertisement.defaultInstanceName,
                type: type, subtypes: configuration.subtypes, port: UInt16(port), txt: txt
            )
            advertisement.interfaceIndices = advertisedInterfaces(settings.network?.current)
            try backend.advertise(advertisement)
            state.withLock { $0.advertisement = advertisement }
        }
        backend.browse(type)
        for domain in configuration.browseDomains { backend.browse(type, domain: domain) }
    }

    /// The interfaces to advertise on: nil (all) when the filter admits everything or nobody watches the network,
    /// else the up interfaces it admits.
    private func advertisedInterfaces(_ snapshot: NetworkSnapshot?) -> [Int32]? {
        let filter = settings.configuration.interfaces
        guard let snapshot, filter != .all else { return nil }
        return snapshot.usable(by: filter).map(\.index)
    }

    /// The network changed: advertise on the interfaces usable now, and let every dialling loop that waits out a
    /// backoff try at once (a link that came back, a new address).
    func networkChanged(_ snapshot: NetworkSnapshot) {
        let interfaces = advertisedInterfaces(snapshot)
        let (changed, wakeups) = state.withLock { state -> (Advertisement?, [CheckedContinuation<Void, Never>]) in
            defer { state.wakeups.removeAll() }
            var changed: Advertisement?
            if var advertisement = state.advertisement, advertisement.interfaceIndices != interfaces {
                advertisement.interfaceIndices = interfaces
                state.advertisement = advertisement
                changed = advertisement
            }
            return (changed, Array(state.wakeups.values))
        }
        if changed != nil {
            logger.info(
                "network interfaces changed; advertising on the ones usable now",
                metadata: ["interfaces": "\(snapshot.usable(by: settings.configuration.interfaces).map(\.name).joined(separator: ","))"]
            )
            do {
                try publishAdvertisement()
            } catch {
                logger.error("cannot advertise after a network change", metadata: ["error": "\(error)"])
            }
        }
        for wakeup in wakeups { wakeup.resume() }
    }

    /// Sets (or, with nil, removes) an entry of the advertisement's TXT record beside Parley's own and publishes the
    /// change: backends send a TXT update, which browsers see as the service updated. Nothing happens when this node
    /// does not advertise. The record is checked before anything changes: a key of Parley's own, or a record past
    /// its size limit, throws and leaves the advertisement as it was.
    func setExtraTXT(_ value: String?, forKey key: String) throws {
        guard !TXTRecord.ParleyKey.isReserved(key) else { throw DiscoveryError.reservedTXTKey(key) }
        let changed = try state.withLock { state throws(DiscoveryError) -> Bool in
            guard var advertisement = state.advertisement else { return false }
            advertisement.txt[key] = value
            guard advertisement != state.advertisement else { return false }
            _ = try advertisement.validated()
            state.advertisement = advertisement
            return true
        }
        if changed { try publishAdvertisement() }
    }

    /// Hands the advertisement as it is now to the backend (which throws ``DiscoveryError`` for a value it rejects).
    private func publishAdvertisement() throws {
        try publishing.withLock { _ in
            guard let current = state.withLock({ $0.advertisement }) else { return }
            try backend.advertise(current)
        }
    }

    /// The service with only the addresses on interfaces the filter admits, at most
    /// ``DiscoveryConfiguration/maximumAddressesPerService`` of them (addresses without a known interface, as
    /// wide-area results may be, are kept: the routing table picks their way); nil if none is left.
    private func admittedAddresses(of service: DiscoveredService) -> DiscoveredService? {
        let filter = settings.configuration.interfaces
        var admitted = service
        admitted.addresses = Array(service.addresses.filter { address in
            guard let name = address.interfaceName else { return true }
            return filter.admits(name)
        }.prefix(settings.configuration.maximumAddressesPerService))
        return admitted.addresses.isEmpty ? nil : admitted
    }

    /// Withdraws the advertisement and stops the backend; ``run(dial:waitForDeparture:)`` then returns.
    func stop() {
        backend.stop()
        let (waiters, wakeups) = state.withLock { state in
            defer {
                state.statusWaiters.removeAll()
                state.wakeups.removeAll()
            }
            return (state.statusWaiters, Array(state.wakeups.values))
        }
        for waiter in waiters { waiter.resume(returning: .off) }
        for wakeup in wakeups { wakeup.resume() }
    }

    /// Follows the backend's events until it stops, with one dialling loop per admitted service; returns once the
    /// stop has completed (a DNS server answered the removal of the records, or did not in time).
    func run(dial: @escaping Dial, waitForDeparture: @escaping WaitForDeparture) async {
        await withDiscardingTaskGroup { group in
            if let network = settings.network {
                let changes = network.changes()
                group.addTask {
                    for await snapshot in changes { self.networkChanged(snapshot) }
                }
            }
            for await event in backend.events {
                if let service = handle(event) {
                    group.addTask {
                        await self.keepConnected(to: service, dial: dial, waitForDeparture: waitForDeparture)
                    }
                }
            }
            // The backend stopped: loops waiting out a backoff or a departure end with it.
            group.cancelAll()
        }
        await finished()
    }

    /// Returns once the backend's stop has completed (see ``DiscoveryBackend/finished()``).
    func finished() async {
        await backend.finished()
    }

    /// Applies one event; returns a service that needs a new dialling loop.
    private func handle(_ event: DiscoveryEvent) -> DiscoveredService.ID? {
        let localID = settings.localID.rawValue
        switch event {
        case .found(let seen), .updated(let seen):
            guard let service = admittedAddresses(of: seen) else {
                // Seen only on interfaces this node does not use: as good as gone.
                logger.debug(
                    "ignoring a service seen only on excluded interfaces",
                    metadata: ["instance": "\(seen.id)", "addresses": "\(seen.addresses)"])
                return handle(.removed(instanceName: seen.instanceName, type: seen.type, domain: seen.domain))
            }
            let limit = settings.configuration.maximumServices
            let outcome = state.withLock { state -> (isNew: Bool, wakeup: CheckedContinuation<Void, Never>?)? in
                let isNew = state.services[service.id] == nil
                if isNew && state.services.count >= limit { return nil }
                state.services[service.id] = service
                return (isNew, state.wakeups.removeValue(forKey: service.id))
            }
            guard let (isNew, wakeup) = outcome else {
                throttle.warning(
                    "too many services advertised; ignoring this one until others are withdrawn",
                    metadata: ["instance": "\(service.id)", "limit": "\(limit)"], to: logger)
                return nil
            }
            wakeup?.resume()
            let isOwn = service.peerID == localID
            let admitted = settings.configuration.autoConnect.admits(service)
            if isNew && !isOwn {
                // Whether it will be dialled is part of the news: with auto-connect off, this line is the only trace.
                logger.info(
                    "discovered peer service",
                    metadata: [
                        "instance": "\(service.id)", "host": "\(service.hostName)",
                        "port": "\(service.port)", "peer-id": "\(service.peerID ?? "none")",
                        "connect": "\(admitted ? "yes" : "no (the auto-connect policy does not admit it)")",
                    ]
                )
            }
            guard !isOwn, admitted else { return nil }
            let claimed = state.withLock { $0.dialing.insert(service.id).inserted }
            return claimed ? service.id : nil
        case .removed(let name, _, let domain):
            let id = DiscoveredService.ID(instanceName: name, domain: domain)
            let (removed, wakeup) = state.withLock { ($0.services.removeValue(forKey: id), $0.wakeups.removeValue(forKey: id)) }
            wakeup?.resume()
            if let removed, removed.peerID != localID {
                logger.info("peer service withdrawn", metadata: ["instance": "\(id)"])
            }
        case .advertised(let name):
            update(.running(advertisedAs: name))
            logger.info("advertised on the LAN", metadata: ["instance": "\(name)"])
        case .renamed(let from, let to):
            update(.running(advertisedAs: to))
            logger.notice(
                "service name already taken on the LAN; advertising under an alternative name",
                metadata: ["requested": "\(from)", "instance": "\(to)"]
            )
        case .advertisementFailed(let failure):
            logger.error("advertisement failed; peers will not find this node", metadata: ["error": "\(failure)"])
        case .daemonUnavailable(let reason):
            update(.daemonUnavailable(reason))
        case .daemonAvailable:
            // Advertised once the backend says so; a node that does not advertise is running as soon as it browses.
            // So is one whose filter admits no interface that is up: the backend publishes nothing and will report
            // nothing until one comes up, and parleyd must not wait for that to report itself ready.
            let advertises = settings.configuration.advertise && settings.port != nil
            let nowhereToAdvertise = state.withLock { $0.advertisement?.interfaceIndices?.isEmpty == true }
            update(advertises && !nowhereToAdvertise ? nil : .running(advertisedAs: nil))
        }
        return nil
    }

    /// Sets the status (nil: leave a running status as it is, else "running, not yet advertised") and answers
    /// those waiting for discovery to settle.
    private func update(_ status: DiscoveryStatus?) {
        let (settled, waiters) = state.withLock { state -> (DiscoveryStatus, [CheckedContinuation<DiscoveryStatus, Never>]) in
            if let status {
                state.status = status
            } else if case .daemonUnavailable = state.status {
                state.status = .starting
            }
            guard Self.isSettled(state.status) else { return (state.status, []) }
            defer { state.statusWaiters.removeAll() }
            return (state.status, state.statusWaiters)
        }
        for waiter in waiters { waiter.resume(returning: settled) }
    }

    /// Dials `name` and redials when the connection ends, for as long as it is advertised.
    private func keepConnected(to name: DiscoveredService.ID, dial: Dial, waitForDeparture: WaitForDeparture) async {
        defer { _ = state.withLock { $0.dialing.remove(name) } }
        var backoff = makeBackoff()
        while !Task.isCancelled, let service = state.withLock({ $0.services[name] }) {
            if let peer = await dial(service) {
                // Both sides may dial at once; the peer table keeps one connection on both sides. Either way the
                // loop comes back only when the peer is gone.
                let connected = ContinuousClock.now
                await waitForDeparture(peer)
                if let delay = backoff.afterConnection(lasted: .now - connected) {
                    await pause(delay, orUntilChanged: name)
                }
            } else {
                await pause(backoff.delay(), orUntilChanged: name)
            }
        }
    }

    /// Waits out a backoff delay, ending early when the service is updated or removed (a new address deserves a
    /// try at once) or discovery stops.
    private func pause(_ delay: Duration, orUntilChanged name: DiscoveredService.ID) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await Task.sleep(for: delay) }
            group.addTask {
                await withTaskCancellationHandler {
                    await withCheckedContinuation { continuation in
                        let resumeNow = self.state.withLock { state -> Bool in
                            if Task.isCancelled || state.services[name] == nil { return true }
                            state.wakeups[name]?.resume()
                            state.wakeups[name] = continuation
                            return false
                        }
                        if resumeNow { continuation.resume() }
                    }
                } onCancel: {
                    let wakeup = self.state.withLock { $0.wakeups.removeValue(forKey: name) }
                    wakeup?.resume()
                }
            }
            await group.next()
            group.cancelAll()
        }
    }
}
