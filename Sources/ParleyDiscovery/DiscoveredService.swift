/// A service found by browsing, merged over every interface and protocol Avahi saw it on.
public struct DiscoveredService: Sendable, Hashable, CustomStringConvertible {
    public var instanceName: String
    public var type: ServiceType
    /// Usually "local".
    public var domain: String
    /// The host the service runs on ("hosta.local").
    public var hostName: String
    /// Every address it resolved to, across interfaces and IPv4/IPv6, in the order to try them (routable IPv4,
    /// routable IPv6, IPv6 link-local, IPv4 link-local).
    public var addresses: [ResolvedAddress]
    public var port: UInt16
    public var txt: TXTRecord

    public init(
        instanceName: String, type: ServiceType, domain: String, hostName: String, addresses: [ResolvedAddress],
        port: UInt16, txt: TXTRecord
    ) {
        self.instanceName = instanceName
        self.type = type
        self.domain = domain
        self.hostName = hostName
        self.addresses = addresses
        self.port = port
        self.txt = txt
    }

    /// The advertiser's peer id (TXT key `id`): compare it with your own to recognise your own advertisement.
    public var peerID: String? { txt[TXTRecord.ParleyKey.peerID] }

    public var description: String {
        "\(instanceName).\(type).\(domain) at \(hostName):\(port) \(addresses) \(txt)"
    }
}
