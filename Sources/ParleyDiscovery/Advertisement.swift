#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// What to advertise: one DNS-SD service instance.
public struct Advertisement: Sendable, Hashable {
    /// The instance name users see ("Living room"), at most 63 bytes. On a collision the daemon's alternative name
    /// (Avahi's `Name #2`, mDNSResponder's `Name (2)`) is used instead and reported as `DiscoveryEvent.renamed`.
    public var instanceName: String
    public var type: ServiceType
    /// Subtypes, short (`_relay`) or full (`_relay._sub._debug._tcp`).
    public var subtypes: [String]
    /// The TCP port the transceiver listens on.
    public var port: UInt16
    public var txt: TXTRecord
    /// The largest TXT record `advertise` accepts; Parley's own limit by default.
    public var maximumTXTSize: Int
    /// The indices of the interfaces to advertise on; nil: every interface the daemon uses. Empty: none for now
    /// (every interface the filter admits is down), which keeps the advertisement but publishes nothing.
    public var interfaceIndices: [Int32]?

    public init(
        instanceName: String = Advertisement.defaultInstanceName,
        type: ServiceType = .debug,
        subtypes: [String] = [],
        port: UInt16,
        txt: TXTRecord = TXTRecord(),
        maximumTXTSize: Int = TXTRecord.parleySizeLimit,
        interfaceIndices: [Int32]? = nil
    ) {
        self.interfaceIndices = interfaceIndices
        self.instanceName = instanceName
        self.type = type
        self.subtypes = subtypes
        self.port = port
        self.txt = txt
        self.maximumTXTSize = maximumTXTSize
    }

    /// This machine's host name (its first label, cut to 63 bytes), or "Parley" if it has none.
    public static var defaultInstanceName: String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "Parley" }
        let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }.prefix { $0 != UInt8(ascii: ".") }
        let name = String(decoding: bytes, as: UTF8.self)
        return name.isEmpty ? "Parley" : truncated(name, toUTF8Bytes: 63)
    }

    static func truncated(_ string: String, toUTF8Bytes limit: Int) -> String {
        var result = ""
        var size = 0
        for character in string {
            size += character.utf8.count
            if size > limit { break }
            result.append(character)
        }
        return result
    }

    /// The subtypes in full form, after checking everything Avahi would otherwise reject.
    public func validated() throws(DiscoveryError) -> [String] {
        guard (1...63).contains(instanceName.utf8.count) else { throw .invalidInstanceName(instanceName) }
        try txt.validate(maximumSize: maximumTXTSize)
        var full: [String] = []
        for subtype in subtypes {
            let name = try type.subtype(subtype)
            if !full.contains(name) { full.append(name) }
        }
        return full
    }
}
