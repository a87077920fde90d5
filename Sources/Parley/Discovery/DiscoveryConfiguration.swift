import ParleyDiscovery

/// Zero-config discovery for a transceiver: advertise its listener as a DNS-SD service, browse for others of the
/// same type and connect to them by itself.
///
/// ```swift
/// import ParleyAvahi
/// configuration.discovery = DiscoveryConfiguration(backend: .avahi)
/// ```
public struct DiscoveryConfiguration: Sendable {
    /// The DNS-SD implementation: `.avahi` (module `ParleyAvahi`), or your own ``DiscoveryBackend``.
    public var backend: DiscoveryBackendFactory
    /// DNS-SD service type; `_debug._tcp` by default.
    public var serviceType: String
    /// Subtypes to advertise as well (e.g. `_relay`).
    public var subtypes: [String]
    /// Instance name; `nil` means the host name. On a collision Avahi's alternative (`Name #2`) is used.
    public var instanceName: String?
    /// Advertise this transceiver's listener.
    public var advertise: Bool
    /// Which discovered services to connect to.
    public var autoConnect: AutoConnectPolicy
    /// Unicast DNS domains to browse as well as the link ("office.example.org"): wide-area DNS-SD (RFC 6763),
    /// through the DNS servers the system uses. Services found there are dialled like those on the link.
    public var browseDomains: [String]
    /// The interfaces to advertise on, to take discovered addresses from and to accept connections on; by
    /// default every interface but the usual virtual ones (``InterfaceFilter/defaultDeny``).
    public var interfaces: InterfaceFilter
    /// The most services kept (and dialled) at once. Anyone on the link can advertise: a host announcing
    /// thousands of services must not make this node hold and dial all of them. Services beyond the limit are
    /// ignored, with a throttled warning, until others are withdrawn.
    public var maximumServices: Int = 1024
    /// The most addresses kept per service (a service is dialled at its addresses in turn).
    public var maximumAddressesPerService: Int = 16
    /// Entries the advertisement's TXT record carries after Parley's own (`id`, `pv`, `nm`, `auth`, which they may
    /// not replace), within the record's 200 bytes. Entries known only once the transceiver runs are set with
    /// ``Transceiver/setAdvertisedTXT(_:forKey:)``.
    public var extraTXT = TXTRecord()

    public init(
        backend: DiscoveryBackendFactory,
        serviceType: String = ServiceType.debug.rawValue,
        subtypes: [String] = [],
        instanceName: String? = nil,
        advertise: Bool = true,
        autoConnect: AutoConnectPolicy = .all,
        browseDomains: [String] = [],
        interfaces: InterfaceFilter = .standard
    ) {
        self.browseDomains = browseDomains
        self.interfaces = interfaces
        self.backend = backend
        self.serviceType = serviceType
        self.subtypes = subtypes
        self.instanceName = instanceName
        self.advertise = advertise
        self.autoConnect = autoConnect
    }
}

/// Which discovered services a transceiver connects to by itself. Its own advertisement is never connected to.
public enum AutoConnectPolicy: Sendable {
    /// Every service of the type that is a Parley peer (has a peer id in its TXT record).
    case all
    /// None: discovery only reports; the app calls `connect` itself.
    case none
    /// Those for which the predicate holds (it sees the instance name, host, addresses and TXT record).
    case matching(@Sendable (DiscoveredService) -> Bool)

    func admits(_ service: DiscoveredService) -> Bool {
        switch self {
        case .all: service.peerID != nil
        case .none: false
        case .matching(let predicate): predicate(service)
        }
    }
}

/// Whether discovery is working, as the transceiver last heard from its backend's daemon.
public enum DiscoveryStatus: Sendable, Hashable, CustomStringConvertible {
    case off
    case starting
    case running(advertisedAs: String?)
    case daemonUnavailable(String)

    public var description: String {
        switch self {
        case .off: "off"
        case .starting: "starting"
        case .running(let name): name.map { "running, advertised as \"\($0)\"" } ?? "running, not advertising"
        case .daemonUnavailable(let reason): "discovery daemon unavailable: \(reason)"
        }
    }
}
