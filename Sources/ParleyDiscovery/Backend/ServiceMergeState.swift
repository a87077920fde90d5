/// One service instance as a backend's browser names it: what tells two services apart.
package struct ServiceKey: Hashable, Sendable {
    package var instanceName: String
    package var type: ServiceType
    package var domain: String

    package init(instanceName: String, type: ServiceType, domain: String) {
        self.instanceName = instanceName
        self.type = type
        self.domain = domain
    }

    package var removedEvent: DiscoveryEvent { .removed(instanceName: instanceName, type: type, domain: domain) }
}

/// What resolving one slot of a service gave: its host, the addresses found for it there, port and TXT record.
package struct ServiceResolution: Hashable, Sendable {
    package var hostName: String
    package var addresses: [ResolvedAddress]
    package var port: UInt16
    package var txt: TXTRecord

    package init(hostName: String, addresses: [ResolvedAddress], port: UInt16, txt: TXTRecord) {
        self.hostName = hostName
        self.addresses = addresses
        self.port = port
        self.txt = txt
    }
}

/// Turns a backend's per-slot browse and resolve results into one event stream per service.
///
/// A DNS-SD daemon reports a service once for every place it is seen — Avahi once per (interface, protocol) pair,
/// so that a dual-stack host on two interfaces shows up four times; `dns_sd.h` once per interface — and each is
/// resolved separately. This state machine keeps one slot per place (the backend chooses what a `Slot` is) and
/// reports the service once: `found` when the first slot resolves, `updated` when the merged view changes (an
/// address added or gone, new TXT), and `removed` only when the last slot is gone. It makes no C calls, so it is
/// tested without a daemon.
package struct ServiceMergeState<Slot: Hashable & Sendable>: Sendable {
    private struct Service: Sendable {
        /// nil until the slot's resolver answers.
        var slots: [Slot: Resolved?] = [:]
        /// What was last reported, nil if nothing yet.
        var reported: DiscoveredService?
    }

    private struct Resolved: Sendable {
        var resolution: ServiceResolution
        var sequence: UInt64
    }

    private var services: [ServiceKey: Service] = [:]
    private var sequence: UInt64 = 0

    package init() {}

    /// Every service reported and not yet removed.
    package var reportedServices: [DiscoveredService] { services.values.compactMap(\.reported) }

    /// The browser saw the service on a slot. Nothing to report until it resolves.
    package mutating func appeared(_ key: ServiceKey, on slot: Slot) {
        if services[key]?.slots[slot] == nil {
            services[key, default: Service()].slots[slot] = .some(nil)
        }
    }

    /// A resolver answered (first time or with new data) for a slot.
    package mutating func resolved(_ key: ServiceKey, on slot: Slot, _ resolution: ServiceResolution) -> [DiscoveryEvent] {
        sequence += 1
        services[key, default: Service()].slots[slot] = Resolved(resolution: resolution, sequence: sequence)
        return report(key)
    }

    /// A resolver gave up on a slot: the slot stays (the browser still sees it) but contributes no address.
    package mutating func resolutionFailed(_ key: ServiceKey, on slot: Slot) -> [DiscoveryEvent] {
        guard services[key]?.slots[slot] != nil else { return [] }
        services[key]?.slots[slot] = .some(nil)
        return report(key)
    }

    /// The browser no longer sees the service on a slot.
    package mutating func disappeared(_ key: ServiceKey, on slot: Slot) -> [DiscoveryEvent] {
        guard services[key]?.slots.removeValue(forKey: slot) != nil else { return [] }
        return report(key)
    }

    /// Every service of `type` in `domain` is gone (browsing stopped); nil means every type and domain (the daemon
    /// went away).
    package mutating func removeAll(ofType type: ServiceType? = nil, domain: String? = nil) -> [DiscoveryEvent] {
        var events: [DiscoveryEvent] = []
        let gone = services.keys.filter { key in
            (type == nil || key.type == type) && (domain.map { sameDomain(key.domain, $0) } ?? true)
        }
        for key in gone.sorted(by: { ($0.instanceName, $0.domain) < ($1.instanceName, $1.domain) }) {
            if services.removeValue(forKey: key)?.reported != nil { events.append(key.removedEvent) }
        }
        return events
    }

    /// The services of `type` in `domain` (reported or not).
    package func keys(ofType type: ServiceType, domain: String) -> [ServiceKey] {
        services.keys.filter { $0.type == type && sameDomain($0.domain, domain) }
    }

    /// One service is gone from every slot.
    package mutating func removeAll(_ key: ServiceKey) -> [DiscoveryEvent] {
        services.removeValue(forKey: key)?.reported != nil ? [key.removedEvent] : []
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
        for address in resolved.flatMap(\.resolution.addresses).sorted() where !addresses.contains(address) {
            addresses.append(address)
        }
        return DiscoveredService(
            instanceName: key.instanceName, type: key.type, domain: key.domain, hostName: latest.hostName,
            addresses: addresses, port: latest.port, txt: latest.txt
        )
    }
}

/// Domain names compare without case and without a final dot.
package func sameDomain(_ a: String, _ b: String) -> Bool {
    withoutFinalDot(a).lowercased() == withoutFinalDot(b).lowercased()
}

/// A name as Parley reports it: without the final dot that DNS-SD APIs add to absolute names (`local.` → `local`).
package func withoutFinalDot(_ name: String) -> String {
    name.hasSuffix(".") ? String(name.dropLast()) : name
}
