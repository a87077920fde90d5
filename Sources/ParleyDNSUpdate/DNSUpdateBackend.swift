import Logging
import ParleyDiscovery

/// A discovery backend that also registers the advertisement in a unicast DNS zone: wraps another backend (Avahi
/// for the link) and adds a ``DNSUpdateRegistrar``. Browsing, events and the link advertisement are the wrapped
/// backend's; `advertise` also registers in DNS, `withdraw` and `stop` remove the DNS records without waiting for
/// the server, and `finished` waits for its answer (a clean shutdown leaves none behind, and a silent server does
/// not hold up the goodbye to the peers).
public final class DNSUpdateBackend: DiscoveryBackend {
    private let base: any DiscoveryBackend
    private let registrar: DNSUpdateRegistrar

    public init(wrapping base: any DiscoveryBackend, settings: DNSUpdateSettings, logger: Logger) {
        self.base = base
        self.registrar = DNSUpdateRegistrar(settings: settings, logger: logger)
    }

    public var events: AsyncStream<DiscoveryEvent> { base.events }
    public func start() throws { try base.start() }

    public func advertise(_ advertisement: Advertisement) throws {
        try base.advertise(advertisement)
        // The DNS zone is not per interface: what is registered is the host's usable addresses.
        var registered = advertisement
        registered.interfaceIndices = nil
        registrar.register(registered)
    }

    public func withdraw() {
        registrar.deregister()
        base.withdraw()
    }

    public func browse(_ type: ServiceType, domain: String?) { base.browse(type, domain: domain) }
    public func stopBrowsing(_ type: ServiceType, domain: String?) { base.stopBrowsing(type, domain: domain) }

    public func stop() {
        registrar.stop()
        base.stop()
    }

    /// Returns once the DNS records are removed (or the server did not answer in time).
    public func finished() async {
        await registrar.finished()
        await base.finished()
    }
}

extension DiscoveryBackendFactory {
    /// `base`, registering the advertisement in DNS as well (see ``DNSUpdateBackend``).
    public func registering(in settings: DNSUpdateSettings) -> DiscoveryBackendFactory {
        DiscoveryBackendFactory(name: "\(name)+dns-update(\(settings.domain))") { logger in
            DNSUpdateBackend(wrapping: self.makeBackend(logger: logger), settings: settings, logger: logger)
        }
    }
}
