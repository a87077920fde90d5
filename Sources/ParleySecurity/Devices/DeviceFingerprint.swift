@preconcurrency import Crypto

/// What names a device: the SHA-256 of its certificate (DER). Shown in base32 (RFC 4648's alphabet, A–Z and 2–7,
/// no letters a person confuses with digits), in groups of four: ``short`` (16 characters, 80 bits) where a
/// person reads it, ``full`` (52 characters) where it is stored or compared.
public struct DeviceFingerprint: Hashable, Sendable, Comparable, CustomStringConvertible {
    public static let byteCount = 32

    /// The 32 bytes of the digest.
    public let bytes: [UInt8]

    public init(certificateDER: some Sequence<UInt8>) {
        bytes = Array(SHA256.hash(data: Array(certificateDER)))
    }

    /// From ``full`` (or its characters without the dashes, in either case); nil for anything else.
    public init?(_ text: String) {
        let characters = text.uppercased().filter { $0 != "-" }
        guard characters.count == Self.base32Length, let bytes = Self.base32Decode(characters), bytes.count == Self.byteCount else {
            return nil
        }
        self.bytes = bytes
    }

    private static let base32Length = (byteCount * 8 + 4) / 5

    /// All 52 characters, in groups of four.
    public var full: String { Self.grouped(Self.base32Encode(bytes)) }

    /// The first 16 characters, in groups of four: what a person reads and types.
    public var short: String { Self.grouped(String(Self.base32Encode(bytes).prefix(16))) }

    public var description: String { short }

    /// Whether `text` (dashes and case ignored) begins this fingerprint: how a person names a device by the part of
    /// its fingerprint they read.
    public func matches(prefix text: String) -> Bool {
        let wanted = text.uppercased().filter { $0 != "-" }
        return !wanted.isEmpty && Self.base32Encode(bytes).hasPrefix(wanted)
    }

    public static func < (lhs: DeviceFingerprint, rhs: DeviceFingerprint) -> Bool { lhs.bytes.lexicographicallyPrecedes(rhs.bytes) }

    // MARK: - Base32

    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".utf8)

    static func base32Encode(_ bytes: [UInt8]) -> String {
        var output: [UInt8] = []
        var buffer = 0
        var bits = 0
        for byte in bytes {
            buffer = buffer << 8 | Int(byte)
            bits += 8
            while bits >= 5 {
                bits -= 5
                output.append(alphabet[(buffer >> bits) & 31])
            }
        }
        if bits > 0 { output.append(alphabet[(buffer << (5 - bits)) & 31]) }
        return String(decoding: output, as: UTF8.self)
    }

    static func base32Decode(_ text: String) -> [UInt8]? {
        var output: [UInt8] = []
        var buffer = 0
        var bits = 0
        for character in text.utf8 {
            guard let value = alphabet.firstIndex(of: character) else { return nil }
            buffer = (buffer << 5 | value) & 0xFFFF
            bits += 5
            if bits >= 8 {
                bits -= 8
                output.append(UInt8((buffer >> bits) & 0xFF))
            }
        }
        // The padding bits of the last character are zeros in every encoding of whole bytes.
        guard buffer & ((1 << bits) - 1) == 0 else { return nil }
        return output
    }

    private static func grouped(_ characters: String) -> String {
        var groups: [Substring] = []
        var rest = Substring(characters)
        while !rest.isEmpty {
            groups.append(rest.prefix(4))
            rest = rest.dropFirst(4)
        }
        return groups.joined(separator: "-")
    }
}

/// The six digits two devices show while they pair: derived from both certificates' fingerprints, in an order that
/// does not depend on which side computes it. A machine in the middle terminates each side's TLS with a
/// certificate of its own, so each side computes its code over a different pair and the two codes differ (they
/// match by chance once in a million).
public struct PairingCode: Hashable, Sendable, CustomStringConvertible {
    public let digits: String

    public init(_ one: DeviceFingerprint, _ other: DeviceFingerprint) {
        let (low, high) = one < other ? (one, other) : (other, one)
        var hash = SHA256()
        hash.update(data: Array("parley pairing code 1".utf8))
        hash.update(data: low.bytes)
        hash.update(data: high.bytes)
        let value = Array(hash.finalize()).prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let number = String(value % 1_000_000)
        digits = String(repeating: "0", count: 6 - number.count) + number
    }

    /// "123 456": the way it is shown, easier to compare aloud.
    public var description: String { "\(digits.prefix(3)) \(digits.suffix(3))" }
}
