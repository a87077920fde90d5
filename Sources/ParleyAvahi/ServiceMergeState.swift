import ParleyDiscovery
/// Turns Avahi's per-interface, per-protocol browse and resolve results into one event stream per service.
///
/// Avahi reports a service once for every (interface, protocol) pair it is seen on — a dual-stack host on two
/// interfaces shows up four times — and resolves each separately. This state machine keeps one "slot" per pair and
/// reports the service once: `found` when the first slot resolves, `updated` when the merged view changes (an
/// address added or gone, new TXT), and `removed` only when the last slot is gone. It makes no C calls, so it is
/// tested without a daemon.
struct ServiceMergeState {
    struct ServiceKey: Hashable, Sendable {
        var instanceName: String
        var type: ServiceType
        var domain: String

        var removedEvent: DiscoveryEvent { .removed(instanceName: instanceName, type: type, domain: domain) }
    }

    /// The (interface, protocol) pair a browse result came on. `family` is the mDNS protocol, not the address family.
    struct Slot: Hashable, Sendable {
        var interfaceIndex: Int32
        var family: ResolvedAddress.Family
    }

    /// What one resolver reported for one slot.
    struct Resolution: Hashable, Sendable {
        var hostName: String
        var address: ResolvedAddress
        var port: UInt16
        var txt: TXTRecord
    }

    private struct Service {
        /// nil until the slot's resolver answers.
        var slots: [Slot: (resolution: Resolution, sequence: UInt64)?] = [:]
        /// What was last reported, nil if nothing yet.
        var reported: DiscoveredService?
    }

    private var services: [ServiceKey: Service] = [:]
    private var sequence: UInt64 = 0

    /// Every service reported and not yet removed.
    var reportedServices: [DiscoveredService] { services.values.compactMap(\.reported) }

    /// The browser saw the service on a slot. Nothing to report until it resolves.
    mutating func appeared(_ key: ServiceKey, on slot: Slot) {
        if services[key]?.slots[slot] == nil {
            services[key, default: Service()].slots[slot] = .some(nil)
        }
    }

    /// A resolver answered (first time or with new data) for a slot.
    mutating func resolved(_ key: ServiceKey, on slot: Slot, _ resolution: Resolution) -> [DiscoveryEvent] {
        sequence += 1
        services[key, default: Service()].slots[slot] = (resolution, sequence)
        return report(key)
    }

    /// A resolver gave up on a slot: the slot stays (the browser still sees it) but contributes no address.
    mutating func resolutionFailed(_ key: ServiceKey, on slot: Slot) -> [DiscoveryEvent] {
        guard services[key]?.slots[slot] != nil else { return [] }
        services[key]?.slots[slot] = .some(nil)
        return report(key)
    }

    /// The browser no longer sees the service on a slot.
    mutating func disappeared(_ key: ServiceKey, on slot: Slot) -> [DiscoveryEvent] {
        guard services[key]?.slots.removeValue(forKey: slot) != nil else { return [] }
        return report(key)
    }

    /// Every service of `type` in `domain` is gone (browsing stopped); nil means every type and domain (the daemon
    /// went away).
    mutating func removeAll(ofType type: ServiceType? = nil, domain: String? = nil) -> [DiscoveryEvent] {
        var events: [DiscoveryEvent] = []
        let gone = services.keys.filter { key in
            (type == nil || key.type == type) && (domain == nil || Self.sameDomain(key.domain, domain!))
        }
        for key in gone.sorted(by: { ($0.instanceName, $0.domain) < ($1.instanceName, $1.domain) }) {
            if services.removeValue(forKey: key)?.reported != nil { events.append(key.removedEvent) }
        }
        return events
    }

    /// The services of `type` in `domain` (reported or not).
    func keys(ofType type: ServiceType, domain: String) -> [ServiceKey] {
        services.keys.filter { $0.type == type && Self.sameDomain($0.domain, domain) }
    }

    /// One service is gone from every slot.
    mutating func removeAll(_ key: ServiceKey) -> [DiscoveryEvent] {
        services.removeValue(forKey: key)?.reported != nil ? [key.removedEvent] : []
    }

    /// Domain names compare without case and without a final dot.
    static func sameDomain(_ a: String, _ b: String) -> Bool {
        func canonical(_ name: String) -> String { (name.hasSuffix(".") ? String(name.dropLast()) : name).lowercased() }
        return canonical(a) == canonical(b)
    }

    /// Compares the merged view with what was reported and says what changed.
    private mutating func report(_ key: ServiceKey) -> [DiscoveryEvent] {
        guard let service = services[key] else { return [] }
        if service.slots.isEmpty {
            services[key] = nil
            return service.reported == nil ? [] : [key.removedEvent]
        }
        // Slots remain but none is resolved: keep what was reported until one resolves or the last goes away.
        guard let merged = merge(key, service) else { return [] }
        guard merged != service.reported else { return [] }
        services[key]?.reported = merged
        return service.reported == nil ? [.found(merged)] : [.updated(merged)]
    }

    private func merge(_ key: ServiceKey, _ service: Service) -> DiscoveredService? {
        let resolved = service.slots.values.compactMap { $0 }
        guard let latest = resolved.max(by: { $0.sequence < $1.sequence })?.resolution else { return nil }
        var addresses: [ResolvedAddress] = []
        for address in resolved.map(\.resolution.address).sorted() where !addresses.contains(address) {
            addresses.append(address)
        }
        return DiscoveredService(
            instanceName: key.instanceName, type: key.type, domain: key.domain, hostName: latest.hostName,
            addresses: addresses, port: latest.port, txt: latest.txt
        )
    }
}
