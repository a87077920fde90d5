#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Which network interfaces Parley advertises on, browses on and accepts connections on, by name or shell
/// pattern (`eth0`, `wl*`, `enp?s0`).
///
/// The rule, in order:
/// 1. loopback is always usable for accepting (local apps and parleyctl reach parleyd there);
/// 2. with an allow list, an interface is used only if a pattern of it matches, and only the explicit deny list
///    applies after it (asking for `docker0` by name is enough: the default deny list is not in the way);
/// 3. without one, every interface is used except those the deny list matches, which by default names the usual
///    virtual interfaces (container bridges, VM networks, VPN tunnels): ``defaultDeny``.
public struct InterfaceFilter: Sendable, Hashable, CustomStringConvertible {
    /// Interfaces container runtimes, hypervisors and VPNs create. Peers are rarely meant to be found there, and
    /// advertising there announces the host to every container and VM.
    public static let defaultDeny = [
        "docker*", "br-*", "veth*", "virbr*", "vnet*", "lxcbr*", "lxdbr*", "podman*", "cni*", "flannel*", "cali*",
        "vboxnet*", "vmnet*", "tun*", "tap*", "wg*", "tailscale*", "zt*",
        // Apple's own: VPN tunnels (and iCloud Private Relay), AirDrop's peer-to-peer Wi-Fi and its low-latency link.
        "utun*", "awdl*", "llw*",
    ]

    /// Patterns an interface must match to be used; empty means every interface.
    public var allow: [String]
    /// Patterns of interfaces never used; nil means ``defaultDeny`` when there is no allow list, none when there is.
    public var deny: [String]?

    /// Every interface except the usual virtual ones.
    public static let standard = InterfaceFilter()
    /// Every interface, virtual ones included.
    public static let all = InterfaceFilter(allow: [], deny: [])

    public init(allow: [String] = [], deny: [String]? = nil) {
        self.allow = allow
        self.deny = deny
    }

    /// The deny patterns in force.
    public var effectiveDeny: [String] { deny ?? (allow.isEmpty ? Self.defaultDeny : []) }

    /// Whether an interface named `name` is used for advertising and browsing.
    public func admits(_ name: String) -> Bool {
        if !allow.isEmpty, !allow.contains(where: { Self.matches($0, name) }) { return false }
        return !effectiveDeny.contains { Self.matches($0, name) }
    }

    /// Whether a connection that arrived on interface `name` is accepted (loopback always is).
    public func admitsListening(on name: String, isLoopback: Bool) -> Bool {
        isLoopback || admits(name)
    }

    /// Shell pattern matching (`*`, `?`, `[…]`), as for file names.
    static func matches(_ pattern: String, _ name: String) -> Bool {
        fnmatch(pattern, name, 0) == 0
    }

    /// A problem with a pattern, said for a configuration error; nil if every pattern is usable.
    public static func invalidPattern(in patterns: [String]) -> String? {
        for pattern in patterns {
            if pattern.isEmpty { return "an empty pattern" }
            if pattern.utf8.count > 64 { return "'\(pattern)' is longer than 64 bytes" }
            if pattern.contains(where: { $0.isWhitespace || $0 == "/" }) { return "'\(pattern)' contains a space or '/'" }
        }
        return nil
    }

    public var description: String {
        let deny = effectiveDeny
        switch (allow.isEmpty, deny.isEmpty) {
        case (true, true): return "every interface"
        case (true, false): return "every interface except \(deny.joined(separator: ", "))"
        case (false, true): return "only \(allow.joined(separator: ", "))"
        case (false, false): return "only \(allow.joined(separator: ", ")), except \(deny.joined(separator: ", "))"
        }
    }
}
