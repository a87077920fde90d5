/// The TXT record of a DNS-SD service: an ordered list of `key=value` strings (RFC 6763 §6).
///
/// Keys compare without case and the first occurrence of a key wins, as the RFC says. Values are bytes; the
/// subscript reads and writes them as UTF-8 text. A key present without `=` is a boolean attribute whose value is
/// `nil` (see `contains(_:)`).
public struct TXTRecord: Sendable, Hashable, ExpressibleByDictionaryLiteral, CustomStringConvertible {
    /// One `key[=value]` string of the record.
    public struct Entry: Sendable, Hashable {
        public var key: String
        /// The bytes after `=`, or nil for a key given without `=`.
        public var value: [UInt8]?

        public init(key: String, value: [UInt8]?) {
            self.key = key
            self.value = value
        }

        /// The value as UTF-8 text (nil if absent or not valid UTF-8).
        public var stringValue: String? {
            guard let value else { return nil }
            return String(validating: value, as: UTF8.self)
        }

        /// The bytes of the TXT string: `key`, or `key=value`.
        var encoded: [UInt8] {
            var bytes = Array(key.utf8)
            if let value {
                bytes.append(UInt8(ascii: "="))
                bytes.append(contentsOf: value)
            }
            return bytes
        }
    }

    /// Keys of the TXT record Parley advertises (short, to keep the record small).
    public enum ParleyKey {
        /// The peer id (a UUID string); lets a peer recognise its own advertisement.
        public static let peerID = "id"
        /// The Parley protocol version, e.g. "1".
        public static let protocolVersion = "pv"
        /// The peer's display name.
        public static let displayName = "nm"
        /// "1" if connecting needs a shared secret, "0" otherwise.
        public static let authentication = "auth"
        /// The short form of the node's device fingerprint, when it accepts devices over TLS: an app paired with
        /// it recognises it before dialling.
        public static let deviceFingerprint = "fp"

        /// Every key of Parley's own: an app's extra entries may not use them.
        public static let all: Set<String> = [peerID, protocolVersion, displayName, authentication, deviceFingerprint]

        /// Whether `key` is one of Parley's own (keys compare without case).
        public static func isReserved(_ key: String) -> Bool { all.contains(key.lowercased()) }
    }

    /// The size Parley keeps its own TXT record under (the issue's budget, well below the 1300-byte
    /// recommendation of RFC 6763 §6.2 so a whole announcement fits in one small packet).
    public static let parleySizeLimit = 200

    public private(set) var entries: [Entry]

    public init() { entries = [] }

    /// A record with these entries, in order (a later duplicate of a key is dropped).
    public init(_ pairs: [(key: String, value: String)]) {
        entries = []
        for pair in pairs { self[pair.key] = pair.value }
    }

    public init(dictionaryLiteral elements: (String, String)...) {
        self.init(elements.map { (key: $0.0, value: $0.1) })
    }

    /// Builds a record from the raw TXT strings, in wire order; strings with an empty key are ignored and only the
    /// first of duplicate keys is kept (RFC 6763 §6.4).
    public init(strings: [[UInt8]]) {
        entries = []
        for string in strings {
            let equals = string.firstIndex(of: UInt8(ascii: "="))
            let keyBytes = string[..<(equals ?? string.endIndex)]
            guard !keyBytes.isEmpty else { continue }
            let key = String(decoding: keyBytes, as: UTF8.self)
            guard index(of: key) == nil else { continue }
            let value = equals.map { Array(string[string.index(after: $0)...]) }
            entries.append(Entry(key: key, value: value))
        }
    }

    /// Parley's own record: peer id, protocol version, display name, whether a secret is required and, for a node
    /// that accepts devices, its fingerprint's short form.
    public static func parley(
        peerID: String, displayName: String, protocolVersion: Int = 1, requiresSecret: Bool, deviceFingerprint: String? = nil
    ) -> TXTRecord {
        var record: TXTRecord = [
            ParleyKey.peerID: peerID,
            ParleyKey.protocolVersion: String(protocolVersion),
            ParleyKey.displayName: displayName,
            ParleyKey.authentication: requiresSecret ? "1" : "0",
        ]
        if let deviceFingerprint { record[ParleyKey.deviceFingerprint] = deviceFingerprint }
        return record
    }

    private func index(of key: String) -> Int? {
        let wanted = key.lowercased()
        return entries.firstIndex { $0.key.lowercased() == wanted }
    }

    /// The value of `key` as UTF-8 text; nil if the key is absent or has no value. Setting a value replaces the
    /// entry in place (or appends it); setting nil removes the key.
    public subscript(key: String) -> String? {
        get { index(of: key).flatMap { entries[$0].stringValue } }
        set {
            let value = newValue.map { Array($0.utf8) }
            setValue(value, forKey: key, removeIfNil: true)
        }
    }

    /// The raw bytes of `key`'s value.
    public func value(forKey key: String) -> [UInt8]? {
        index(of: key).flatMap { entries[$0].value }
    }

    /// Whether `key` is present (with or without a value).
    public func contains(_ key: String) -> Bool { index(of: key) != nil }

    /// Sets `key` to raw bytes; a nil value makes it a boolean attribute (`key` without `=`).
    public mutating func setValue(_ value: [UInt8]?, forKey key: String) {
        setValue(value, forKey: key, removeIfNil: false)
    }

    private mutating func setValue(_ value: [UInt8]?, forKey key: String, removeIfNil: Bool) {
        let existing = index(of: key)
        switch (existing, value == nil && removeIfNil) {
        case (let index?, true): entries.remove(at: index)
        case (nil, true): break
        case (let index?, false): entries[index].value = value
        case (nil, false): entries.append(Entry(key: key, value: value))
        }
    }

    public var keys: [String] { entries.map(\.key) }

    public var isEmpty: Bool { entries.isEmpty }

    /// The size of the record on the wire: each string with its length byte.
    public var encodedSize: Int { entries.reduce(0) { $0 + 1 + $1.encoded.count } }

    /// Checks every key (printable ASCII without `=`), every string (at most 255 bytes) and the total size.
    public func validate(maximumSize: Int) throws(DiscoveryError) {
        for entry in entries {
            let keyBytes = Array(entry.key.utf8)
            guard !keyBytes.isEmpty, keyBytes.allSatisfy({ $0 >= 0x20 && $0 <= 0x7E && $0 != UInt8(ascii: "=") })
            else { throw .invalidTXTKey(entry.key) }
            let size = entry.encoded.count
            guard size <= 255 else { throw .txtEntryTooLong(key: entry.key, size: size) }
        }
        guard encodedSize <= maximumSize else { throw .txtRecordTooLarge(size: encodedSize, limit: maximumSize) }
    }

    /// The strings in wire order.
    public var encodedStrings: [[UInt8]] { entries.map(\.encoded) }

    public var description: String {
        "[" + entries.map { entry in entry.value == nil ? entry.key : "\(entry.key)=\(entry.stringValue ?? "<\(entry.value!.count) bytes>")" }.joined(separator: ", ") + "]"
    }
}
