import Foundation
import ParleyDiscovery

/// Where and how to register this node in a unicast DNS zone by DNS UPDATE (RFC 2136), signed with TSIG.
public struct DNSUpdateSettings: Sendable, Hashable {
    /// The zone to register in ("parley.example.org"); browsers list it in their browse domains.
    public var domain: String
    /// The DNS server that accepts updates for the zone (`HOST`, `HOST:PORT`, `[IPv6]:PORT`; ``parseServer(_:)``);
    /// nil: the zone's primary, found by nsupdate through the system's resolver. A value that does not parse is
    /// never handed to nsupdate: each registration fails, saying so.
    public var server: String?
    /// A TSIG key file in BIND's format (`tsig-keygen` writes one), passed to `nsupdate -k`.
    public var keyFile: String
    /// The records' time to live. Short, because browsers cache the answer for that long.
    public var ttl: Int
    /// How often the records are sent again (they do not expire on their own, but a server may lose them).
    public var refreshInterval: Duration
    /// The interfaces whose addresses are registered as the host's A and AAAA records.
    public var interfaces: InterfaceFilter
    /// The name the host part of the address records' name (`host.domain`) is made from, by
    /// ``hostLabel(for:)``: "Living room" registers `Living-room.domain`.
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

    /// A valid host name label (RFC 952/1123: letters, digits and inner hyphens, at most 63 bytes) made from a
    /// node's name. The address records' owner and the SRV record's target must be host names: a DNS server with
    /// BIND's default `check-names` refuses the whole update otherwise, and the node would never register.
    /// Accents are dropped (`Küche` → `Kuche`), every run of other characters becomes one hyphen (`Living room` →
    /// `Living-room`), hyphens at either end go, and a name with nothing left (all emoji, another script) becomes
    /// `parley-` and eight hex digits of a hash of its UTF-8, so that two such names do not share a host name.
    public static func hostLabel(for name: String) -> String {
        var label = ""
        var hyphen = false
        for scalar in name.decomposedStringWithCanonicalMapping.unicodeScalars {
            if scalar.properties.generalCategory == .nonspacingMark { continue }
            if scalar.isASCII, scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) {
                if hyphen && !label.isEmpty { label.append("-") }
                hyphen = false
                label.unicodeScalars.append(scalar)
            } else {
                hyphen = true
            }
        }
        if label.utf8.count > 63 {
            label = String(label.utf8.prefix(63))!
            while label.hasSuffix("-") { label.removeLast() }
        }
        guard label.isEmpty else { return label }
        // FNV-1a: stable across runs and platforms, unlike Hasher.
        var hash: UInt32 = 0x811C_9DC5
        for byte in name.utf8 { hash = (hash ^ UInt32(byte)) &* 0x0100_0193 }
        let digits = String(hash, radix: 16)
        return "parley-" + String(repeating: "0", count: 8 - digits.count) + digits
    }

    /// `text` as the server nsupdate is to send to: `HOST`, `HOST:PORT`, an IPv6 address, or `[IPv6]:PORT`, where HOST
    /// is an IPv4 address or a host name and PORT is 1–65535. Nil for anything else: the value goes into nsupdate's
    /// script, where a space or a line break would add commands of its own.
    public static func parseServer(_ text: String) -> (host: String, port: Int?)? {
        func port(_ digits: Substring) -> Int? {
            guard !digits.isEmpty, digits.count <= 5, digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber),
                let number = Int(digits), (1...65535).contains(number)
            else { return nil }
            return number
        }
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            let host = String(text[text.index(after: text.startIndex)..<close])
            guard isIPv6(host) else { return nil }
            let rest = text[text.index(after: close)...]
            if rest.isEmpty { return (host, nil) }
            guard rest.hasPrefix(":"), let number = port(rest.dropFirst()) else { return nil }
            return (host, number)
        }
        if text.filter({ $0 == ":" }).count > 1 { return isIPv6(text) ? (text, nil) : nil }
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard let host = parts.first.map(String.init), isIPv4(host) || isHostName(host) else { return nil }
        if parts.count == 1 { return (host, nil) }
        guard parts.count == 2, let number = port(parts[1]) else { return nil }
        return (host, number)
    }

    private static func isIPv4(_ text: String) -> Bool {
        var address = in_addr()
        return inet_pton(AF_INET, text, &address) == 1
    }

    private static func isIPv6(_ text: String) -> Bool {
        var address = in6_addr()
        return inet_pton(AF_INET6, text, &address) == 1
    }

    /// Letters, digits and inner hyphens in each label of 1–63 bytes, at most 253 bytes in all, a final dot allowed.
    private static func isHostName(_ text: String) -> Bool {
        let name = text.hasSuffix(".") ? text.dropLast() : Substring(text)
        guard !name.isEmpty, name.utf8.count <= 253 else { return false }
        return name.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { label in
            (1...63).contains(label.utf8.count) && !label.hasPrefix("-") && !label.hasSuffix("-")
                && label.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }
        }
    }
}
