#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// One network interface as the kernel reports it at one moment.
public struct NetworkInterface: Sendable, Hashable, CustomStringConvertible {
    public var name: String
    public var index: Int32
    /// Administratively up and with a carrier (`IFF_UP` and `IFF_RUNNING`).
    public var isUp: Bool
    public var isLoopback: Bool
    public var addresses: [InterfaceAddress]

    public init(name: String, index: Int32, isUp: Bool, isLoopback: Bool, addresses: [InterfaceAddress]) {
        self.name = name
        self.index = index
        self.isUp = isUp
        self.isLoopback = isLoopback
        self.addresses = addresses
    }

    public var description: String {
        "\(name)(\(isUp ? "up" : "down"): \(addresses.map(\.host).joined(separator: " ")))"
    }
}

/// One address of an interface.
public struct InterfaceAddress: Sendable, Hashable {
    /// Numeric, without scope ("10.0.0.2", "fe80::1").
    public var host: String
    public var family: ResolvedAddress.Family
    public var isLinkLocal: Bool

    public init(host: String, family: ResolvedAddress.Family, isLinkLocal: Bool) {
        self.host = host
        self.family = family
        self.isLinkLocal = isLinkLocal
    }
}

/// The machine's interfaces and their addresses, read with `getifaddrs`. Compared with the previous snapshot it
/// tells what a network change was.
public struct NetworkSnapshot: Sendable, Hashable {
    public var interfaces: [NetworkInterface]

    public init(interfaces: [NetworkInterface]) {
        self.interfaces = interfaces.sorted { $0.index < $1.index }
    }

    /// The interfaces now; empty if the kernel cannot be asked (which it always can on Linux).
    public static func current() -> NetworkSnapshot {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return NetworkSnapshot(interfaces: []) }
        defer { freeifaddrs(list) }
        var byName: [String: NetworkInterface] = [:]
        var order: [String] = []
        var node: UnsafeMutablePointer<ifaddrs>? = first
        while let entry = node {
            node = entry.pointee.ifa_next
            guard let cName = entry.pointee.ifa_name else { continue }
            let name = String(cString: cName)
            let flags = Int32(bitPattern: entry.pointee.ifa_flags)
            if byName[name] == nil {
                byName[name] = NetworkInterface(
                    name: name, index: Int32(bitPattern: if_nametoindex(cName)),
                    isUp: flags & Int32(IFF_UP) != 0 && flags & Int32(IFF_RUNNING) != 0,
                    isLoopback: flags & Int32(IFF_LOOPBACK) != 0, addresses: [])
                order.append(name)
            }
            if let address = entry.pointee.ifa_addr.flatMap(Self.address) {
                byName[name]?.addresses.append(address)
            }
        }
        return NetworkSnapshot(interfaces: order.compactMap { byName[$0] })
    }

    private static func address(_ socketAddress: UnsafeMutablePointer<sockaddr>) -> InterfaceAddress? {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        switch Int32(socketAddress.pointee.sa_family) {
        case AF_INET:
            return socketAddress.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { v4 in
                var raw = v4.pointee.sin_addr
                guard inet_ntop(AF_INET, &raw, &text, socklen_t(text.count)) != nil else { return nil }
                let octets = withUnsafeBytes(of: raw) { Array($0) }
                return InterfaceAddress(
                    host: Self.string(text), family: .ipv4, isLinkLocal: octets[0] == 169 && octets[1] == 254)
            }
        case AF_INET6:
            return socketAddress.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { v6 in
                var raw = v6.pointee.sin6_addr
                guard inet_ntop(AF_INET6, &raw, &text, socklen_t(text.count)) != nil else { return nil }
                let bytes = withUnsafeBytes(of: raw) { Array($0) }
                return InterfaceAddress(
                    host: Self.string(text), family: .ipv6, isLinkLocal: bytes[0] == 0xFE && bytes[1] & 0xC0 == 0x80)
            }
        default:
            return nil
        }
    }

    private static func string(_ characters: [CChar]) -> String {
        String(decoding: characters.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The interface that holds `host` (an IPv4-mapped IPv6 address counts as its IPv4 address).
    public func interface(holding host: String) -> NetworkInterface? {
        let plain = host.hasPrefix("::ffff:") && host.contains(".") ? String(host.dropFirst(7)) : host
        let unscoped = plain.split(separator: "%", maxSplits: 1).first.map(String.init) ?? plain
        return interfaces.first { $0.addresses.contains { $0.host == unscoped } }
    }

    /// The up interfaces `filter` admits, without loopback: where to advertise.
    public func usable(by filter: InterfaceFilter) -> [NetworkInterface] {
        interfaces.filter { $0.isUp && !$0.isLoopback && filter.admits($0.name) }
    }
}
