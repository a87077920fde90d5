/// A service found by browsing, merged over every interface and protocol Avahi saw it on.
public struct DiscoveredService: Sendable, Hashable, CustomStringConvertible {
    public var instanceName: String
    public var type: ServiceType
    /// "local" for the link, else the wide-area (unicast DNS) domain it was found in.
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

    /// Instance name and domain: what tells two services apart (the same name may be advertised on the link and
    /// registered in a DNS domain).
    public var id: ID { ID(instanceName: instanceName, domain: domain) }

    public struct ID: Sendable, Hashable, CustomStringConvertible {
        public var instanceName: String
        public var domain: String

        public init(instanceName: String, domain: String) {
            self.instanceName = instanceName
            self.domain = domain
        }

        public var description: String { domain == "local" ? instanceName : "\(instanceName) (\(domain))" }
    }

    /// The advertiser's peer id (TXT key `id`): compare it with your own to recognise your own advertisement.
    public var peerID: String? { txt[TXTRecord.ParleyKey.peerID] }

    public var description: String {
        "\(instanceName).\(type).\(domain) at \(hostName):\(port) \(addresses) \(txt)"
    }
}
