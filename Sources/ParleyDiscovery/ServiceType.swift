/// A DNS-SD service type such as `_debug._tcp`, validated and kept in lower case (DNS names compare without case).
public struct ServiceType: Sendable, Hashable, CustomStringConvertible {
    /// The type Parley advertises and browses by default.
    public static let debug = try! ServiceType("_debug._tcp")

    /// `_name._tcp` or `_name._udp`, lower case.
    public let rawValue: String

    /// Validates `name` as RFC 6763 §7 describes: `_` + a service name of 1–15 letters, digits and hyphens (at least
    /// one letter, no hyphen first, last or doubled) + `._tcp` or `._udp`.
    public init(_ name: String) throws(DiscoveryError) {
        let lowered = name.lowercased()
        let labels = lowered.split(separator: ".", omittingEmptySubsequences: false)
        guard labels.count == 2, labels[1] == "_tcp" || labels[1] == "_udp", labels[0].hasPrefix("_") else {
            throw .invalidServiceType(name)
        }
        let service = labels[0].dropFirst().utf8
        let allowed = service.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2D }
        let hasLetter = service.contains { $0 >= 0x61 && $0 <= 0x7A }
        guard (1...15).contains(service.count), allowed, hasLetter,
            service.first != 0x2D, service.last != 0x2D, !labels[0].contains("--")
        else {
            throw .invalidServiceType(name)
        }
        self.rawValue = lowered
    }

    /// The full DNS-SD form of a subtype of this type: `_printer` becomes `_printer._sub._debug._tcp`; a subtype
    /// already in full form for this type is checked and returned unchanged.
    public func subtype(_ subtype: String) throws(DiscoveryError) -> String {
        let lowered = subtype.lowercased()
        let label: Substring
        if lowered.hasSuffix("._sub.\(rawValue)") {
            label = lowered.dropLast("._sub.\(rawValue)".count)
        } else {
            label = Substring(lowered)
        }
        guard label.hasPrefix("_"), (2...63).contains(label.utf8.count), !label.contains(".") else {
            throw .invalidSubtype(subtype)
        }
        return "\(label)._sub.\(rawValue)"
    }

    public var description: String { rawValue }
}
