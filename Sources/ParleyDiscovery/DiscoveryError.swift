/// A value given to the discovery layer that DNS-SD would reject, caught before any call into a discovery daemon.
public enum DiscoveryError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A service type that is not `_name._tcp` or `_name._udp` (RFC 6763 §7: name of 1–15 letters, digits and
    /// hyphens, with at least one letter, no hyphen at either end and no double hyphen).
    case invalidServiceType(String)
    /// A subtype that is not `_label` (1–63 bytes) or `_label._sub._name._tcp`.
    case invalidSubtype(String)
    /// An instance name that is empty or longer than 63 bytes of UTF-8.
    case invalidInstanceName(String)
    /// A TXT key that is empty, contains `=` or a byte outside printable ASCII, or makes one string over 255 bytes.
    case invalidTXTKey(String)
    /// One TXT string (`key=value`) longer than 255 bytes.
    case txtEntryTooLong(key: String, size: Int)
    /// The whole TXT record is larger than the limit the advertisement allows.
    case txtRecordTooLarge(size: Int, limit: Int)
    /// An extra TXT entry whose key is one of Parley's own (`id`, `pv`, `nm`, `auth`).
    case reservedTXTKey(String)
    /// The discovery object has been stopped and cannot be started again.
    case stopped

    public var description: String {
        switch self {
        case .invalidServiceType(let type):
            "invalid service type '\(type)': expected _name._tcp or _name._udp with a name of 1-15 letters, digits or hyphens"
        case .invalidSubtype(let subtype):
            "invalid service subtype '\(subtype)': expected _label or _label._sub._name._tcp"
        case .invalidInstanceName(let name):
            "invalid instance name '\(name)': must be 1-63 bytes of UTF-8"
        case .invalidTXTKey(let key):
            "invalid TXT key '\(key)': must be 1-255 printable ASCII characters without '='"
        case .txtEntryTooLong(let key, let size):
            "TXT entry '\(key)' is \(size) bytes, more than the 255 a TXT string can hold"
        case .txtRecordTooLarge(let size, let limit):
            "TXT record is \(size) bytes, more than the limit of \(limit)"
        case .reservedTXTKey(let key):
            "TXT key '\(key)' is one of Parley's own (\(TXTRecord.ParleyKey.all.sorted().joined(separator: ", "))); give the entry another key"
        case .stopped:
            "discovery was stopped and cannot be restarted; create a new discovery backend"
        }
    }
}
