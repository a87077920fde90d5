import ParleyDiscovery

/// Where and how to register this node in a unicast DNS zone by DNS UPDATE (RFC 2136), signed with TSIG.
public struct DNSUpdateSettings: Sendable, Hashable {
    /// The zone to register in ("parley.example.org"); browsers list it in their browse domains.
    public var domain: String
    /// The DNS server that accepts updates for the zone (`HOST` or `HOST:PORT`); nil: the zone's primary, found
    /// by nsupdate through the system's resolver.
    public var server: String?
    /// A TSIG key file in BIND's format (`tsig-keygen` writes one), passed to `nsupdate -k`.
    public var keyFile: String
    /// The records' time to live. Short, because browsers cache the answer for that long.
    public var ttl: Int
    /// How often the records are sent again (they do not expire on their own, but a server may lose them).
    public var refreshInterval: Duration
    /// The interfaces whose addresses are registered as the host's A and AAAA records.
    public var interfaces: InterfaceFilter
    /// The host part of the address records' name (`host.domain`).
    public var hostLabel: String
    /// The `nsupdate` program.
    public var nsupdatePath: String

    public init(
        domain: String, server: String? = nil, keyFile: String, ttl: Int = 30, refreshInterval: Duration = .seconds(300),
        interfaces: InterfaceFilter = .standard, hostLabel: String = Advertisement.defaultInstanceName,
        nsupdatePath: String = "/usr/bin/nsupdate"
    ) {
        self.domain = domain.hasSuffix(".") ? String(domain.dropLast()) : domain
        self.server = server
        self.keyFile = keyFile
        self.ttl = ttl
        self.refreshInterval = refreshInterval
        self.interfaces = interfaces
        self.hostLabel = hostLabel
        self.nsupdatePath = nsupdatePath
    }
}
