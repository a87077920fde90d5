/// One address a service was resolved to, with the interface it was seen on.
public struct ResolvedAddress: Sendable, Hashable, Comparable, CustomStringConvertible {
    public enum Family: Sendable, Hashable {
        case ipv4
        case ipv6
    }

    /// The numeric address, without scope ("10.77.0.1", "fe80::1").
    public var host: String
    public var family: Family
    /// The index of the interface the service was seen on (Avahi's `AvahiIfIndex`).
    public var interfaceIndex: Int32
    /// The name of that interface ("eth0"), if it still exists.
    public var interfaceName: String?
    /// IPv6 fe80::/10 or IPv4 169.254/16: only reachable through `interfaceIndex`.
    public var isLinkLocal: Bool

    public init(host: String, family: Family, interfaceIndex: Int32, interfaceName: String?, isLinkLocal: Bool) {
        self.host = host
        self.family = family
        self.interfaceIndex = interfaceIndex
        self.interfaceName = interfaceName
        self.isLinkLocal = isLinkLocal
    }

    /// The string to hand to `connect`/`getaddrinfo`: the host, with the interface scope (`fe80::1%eth0`, or the
    /// index if the name is unknown) for an IPv6 link-local address.
    public var connectHost: String {
        guard family == .ipv6, isLinkLocal else { return host }
        return "\(host)%\(interfaceName ?? String(interfaceIndex))"
    }

    /// The order to try addresses in: routable IPv4, routable IPv6, IPv6 link-local, IPv4 link-local; then by
    /// interface and address so that the order is stable.
    var preference: Int {
        switch (family, isLinkLocal) {
        case (.ipv4, false): 0
        case (.ipv6, false): 1
        case (.ipv6, true): 2
        case (.ipv4, true): 3
        }
    }

    public static func < (lhs: ResolvedAddress, rhs: ResolvedAddress) -> Bool {
        (lhs.preference, lhs.interfaceIndex, lhs.host) < (rhs.preference, rhs.interfaceIndex, rhs.host)
    }

    public var description: String { connectHost }
}
