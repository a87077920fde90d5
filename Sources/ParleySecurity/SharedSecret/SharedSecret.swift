// swift-crypto 3.12 predates Sendable annotations; its keys are immutable values over copy-on-write storage,
// which 4.x declares Sendable.
@preconcurrency import Crypto
import Foundation

/// The key all nodes of one deployment share: 32 random bytes, stored as one line of hex in a file that only
/// its owner can read (`parleyctl secret generate` writes one). Nodes prove to each other that they know it,
/// and it keys the encryption of their connections; it never goes on the wire.
///
/// Its descriptions never show the bytes, so a secret that ends up in a log line, a `dump` or a debugger stays
/// secret.
public struct SharedSecret: Sendable {
    /// The size of a secret, in bytes.
    public static let byteCount = 32

    let key: SymmetricKey

    private init(key: SymmetricKey) { self.key = key }

    /// A new secret from the system's secure random generator; never one that a secret file would be refused
    /// for (``pattern(in:)``: about one draw in a billion).
    public static func generate() -> SharedSecret {
        while true {
            let key = SymmetricKey(size: .bits256)
            if key.withUnsafeBytes({ pattern(in: Array($0)) }) == nil { return SharedSecret(key: key) }
        }
    }

    /// How many different values a secret file's 32 bytes must take, and as many the 31 steps from one byte to the
    /// next (the difference modulo 256). Random bytes take about 30 of each; fewer than 20 happens about once in a
    /// billion draws. What it refuses is a pattern typed or scripted instead of a secret: one byte repeated, a
    /// short sequence repeated, counting up or down.
    public static let minimumDistinctValues = 20

    /// What makes `bytes` a pattern rather than random bytes, or nil. It cannot tell a hash of a passphrase from
    /// random bytes; only `parleyctl secret generate` (or another secure random source) makes a secret that
    /// cannot be guessed offline.
    public static func pattern(in bytes: [UInt8]) -> String? {
        let values = Set(bytes).count
        if values < minimumDistinctValues {
            return "its \(bytes.count) bytes take only \(values) different \(values == 1 ? "value" : "values")"
        }
        let steps = Set(zip(bytes.dropFirst(), bytes).map { $0 &- $1 }).count
        if steps < minimumDistinctValues {
            return "the steps from each of its bytes to the next take only \(steps) different \(steps == 1 ? "value" : "values")"
        }
        return nil
    }

    /// A secret from exactly ``byteCount`` bytes.
    public init(bytes: some Collection<UInt8>) throws(SharedSecretError) {
        guard bytes.count == Self.byteCount else { throw .wrongLength(bytes.count) }
        key = SymmetricKey(data: Array(bytes))
    }

    /// Who may own a secret file and which permission bits it may have.
    public enum AccessCheck: Sendable {
        /// Owned by the user this process runs as; no permission for its group or others (mode 0600 or 0400).
        case ownerOnly
        /// A credential systemd passed to this service (`LoadCredential=`, under `$CREDENTIALS_DIRECTORY`):
        /// systemd writes it owned by root, mode 0400, and grants the service's user read access with an ACL, which
        /// `stat` shows as group bits. Owned by root or by this user, and nothing for others.
        case systemdCredential
    }

    /// Reads a secret file: one line of 64 hex digits (or the base64 of 32 bytes). Refuses, before reading it,
    /// a file that other users may access (see ``AccessCheck``), and a key that is a pattern (``pattern(in:)``).
    public init(contentsOfFile path: String, accessCheck: AccessCheck = .ownerOnly) throws(SharedSecretError) {
        let text = try Self.readProtectedFile(path, accessCheck: accessCheck)
        let line = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !line.contains(where: \.isNewline) else {
            throw .malformed(path: path, reason: "it holds more than one line")
        }
        if let bytes = Self.hexBytes(line) ?? Data(base64Encoded: line).map(Array.init), bytes.count == Self.byteCount {
            if let pattern = Self.pattern(in: bytes) { throw .pattern(path: path, reason: pattern) }
            key = SymmetricKey(data: bytes)
        } else {
            throw .malformed(path: path, reason: "its line of \(line.count) characters is neither 64 hex digits nor the base64 of 32 bytes")
        }
    }

    /// The file form: the bytes as 64 lower-case hex digits and a newline.
    public var fileText: String {
        key.withUnsafeBytes { bytes in bytes.map { String(format: "%02x", $0) }.joined() } + "\n"
    }

    /// Writes the secret to `path` with mode 0600. The file appears whole or not at all (it is written under a
    /// temporary name first); an existing file is replaced only if `replacing` is true.
    public func write(toFile path: String, replacing: Bool) throws(SharedSecretError) {
        do {
            try ProtectedFile.write(Array(fileText.utf8), to: path, replacing: replacing)
        } catch {
            throw SharedSecretError(error, path: path)
        }
    }

    // MARK: - Reading

    /// The file's text, after checking who may access it. A secret file is one short line; anything much longer
    /// is not one, and is not read whole.
    private static func readProtectedFile(_ path: String, accessCheck: AccessCheck) throws(SharedSecretError) -> String {
        let bytes: [UInt8]
        do {
            bytes = try ProtectedFile.read(path, accessCheck: accessCheck, limit: 1024)
        } catch {
            throw SharedSecretError(error, path: path)
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw .malformed(path: path, reason: "it is not text")
        }
        return text
    }

    private static func hexBytes(_ text: String) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count == 2 * byteCount else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(byteCount)
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let high = hexValue(digits[index]), let low = hexValue(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        return bytes
    }

    private static func hexValue(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

extension SharedSecret: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String { "SharedSecret(\(Self.byteCount) bytes, not shown)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}
