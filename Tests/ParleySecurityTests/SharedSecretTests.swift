import Foundation
import ParleySecurity
import Testing

/// Secret files: written 0600, read back, and refused when anyone but the owner may access them.
@Suite("Shared secret files")
struct SharedSecretTests {
    /// A fresh directory for one test, removed afterwards.
    static func withDirectory<T>(_ body: (String) throws -> T) throws -> T {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("parley-secret-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        return try body(directory)
    }

    static func mode(_ path: String) throws -> Int {
        (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue ?? -1
    }

    @Test("a generated secret is written with mode 0600 as one hex line and reads back the same")
    func writeAndRead() throws {
        try Self.withDirectory { directory in
            let path = directory + "/secret"
            let secret = SharedSecret.generate()
            try secret.write(toFile: path, replacing: false)
            #expect(try Self.mode(path) == 0o600)
            let text = try String(contentsOfFile: path, encoding: .utf8)
            #expect(text.count == 65 && text.hasSuffix("\n") && text.dropLast().allSatisfy(\.isHexDigit))
            #expect(try SharedSecret(contentsOfFile: path).fileText == secret.fileText)
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["secret"])
        }
    }

    @Test("an existing file is replaced only when asked")
    func noOverwrite() throws {
        try Self.withDirectory { directory in
            let path = directory + "/secret"
            let first = SharedSecret.generate()
            try first.write(toFile: path, replacing: false)
            #expect(throws: SharedSecretError.alreadyExists(path: path)) {
                try SharedSecret.generate().write(toFile: path, replacing: false)
            }
            #expect(try SharedSecret(contentsOfFile: path).fileText == first.fileText)
            let second = SharedSecret.generate()
            try second.write(toFile: path, replacing: true)
            #expect(try SharedSecret(contentsOfFile: path).fileText == second.fileText)
            #expect(try Self.mode(path) == 0o600)
        }
    }

    @Test("a file its group or others may access is refused with its path, its mode and the fix", arguments: [0o644, 0o640, 0o604, 0o660])
    func tooOpen(mode: Int) throws {
        try Self.withDirectory { directory in
            let path = directory + "/secret"
            try SharedSecret.generate().write(toFile: path, replacing: false)
            try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
            do throws(SharedSecretError) {
                _ = try SharedSecret(contentsOfFile: path)
                Issue.record("accepted a file with mode \(String(mode, radix: 8))")
            } catch {
                #expect(error == .accessibleToOthers(path: path, mode: UInt32(mode)))
                let text = error.description
                #expect(text.contains(path) && text.contains("mode 0\(String(mode, radix: 8))") && text.contains("chmod 600 \(path)"), "\(text)")
            }
        }
    }

    @Test("a file owned by another user is refused", .enabled(if: geteuid() == 0, "needs root to give a file away"))
    func wrongOwner() throws {
        try Self.withDirectory { directory in
            let path = directory + "/secret"
            try SharedSecret.generate().write(toFile: path, replacing: false)
            #expect(chown(path, 65534, 65534) == 0)
            #expect(throws: SharedSecretError.wrongOwner(path: path, owner: 65534, user: 0)) { try SharedSecret(contentsOfFile: path) }
        }
    }

    @Test("a missing file says how to create one; a file without a secret is refused without echoing its content")
    func missingAndMalformed() throws {
        try Self.withDirectory { directory in
            let missing = directory + "/none"
            #expect(throws: SharedSecretError.missing(path: missing)) { try SharedSecret(contentsOfFile: missing) }
            // The library names no command: parleyd and parleyctl add the one that writes a secret.
            #expect(SharedSecretError.missing(path: missing).description == "shared secret file \(missing) does not exist")

            let path = directory + "/words"
            let content = "correct horse battery staple"
            #expect(FileManager.default.createFile(atPath: path, contents: Data(content.utf8), attributes: [.posixPermissions: 0o600]))
            do throws(SharedSecretError) {
                _ = try SharedSecret(contentsOfFile: path)
                Issue.record("accepted a file without a secret")
            } catch {
                guard case .malformed = error else { throw error }
                #expect(!error.description.contains("horse"))
                #expect(error.description.contains("64 hex digits"))
            }
        }
    }

    @Test("the base64 form of 32 bytes is read as well")
    func base64() throws {
        try Self.withDirectory { directory in
            let bytes = Self.randomBytes()
            let path = directory + "/secret"
            #expect(FileManager.default.createFile(atPath: path, contents: Data((Data(bytes).base64EncodedString() + "\n").utf8), attributes: [.posixPermissions: 0o600]))
            let expected = try SharedSecret(bytes: bytes).fileText
            #expect(try SharedSecret(contentsOfFile: path).fileText == expected)
        }
    }

    @Test("no description of a secret shows its bytes")
    func redacted() throws {
        let secret = try SharedSecret(bytes: [UInt8](repeating: 0xAB, count: 32))
        var dumped = ""
        dump(secret, to: &dumped)
        for text in ["\(secret)", String(reflecting: secret), dumped] {
            #expect(!text.lowercased().contains("abab"), "\(text)")
        }
        #expect(throws: SharedSecretError.wrongLength(31)) { try SharedSecret(bytes: [UInt8](repeating: 0, count: 31)) }
    }
}

extension SharedSecretTests {
    @Test("a systemd credential (root-owned, group bits from its ACL mask) is read only when checked as one")
    func systemdCredential() throws {
        try Self.withDirectory { directory in
            let path = directory + "/secret"
            try SharedSecret.generate().write(toFile: path, replacing: false)
            try FileManager.default.setAttributes([.posixPermissions: 0o440], ofItemAtPath: path)
            #expect(throws: SharedSecretError.accessibleToOthers(path: path, mode: 0o440)) { try SharedSecret(contentsOfFile: path) }
            _ = try SharedSecret(contentsOfFile: path, accessCheck: .systemdCredential)

            try FileManager.default.setAttributes([.posixPermissions: 0o444], ofItemAtPath: path)
            #expect(throws: SharedSecretError.accessibleToOthers(path: path, mode: 0o444)) {
                try SharedSecret(contentsOfFile: path, accessCheck: .systemdCredential)
            }
        }
    }
}

extension SharedSecretTests {
    /// 32 bytes from the system's random generator.
    static func randomBytes() -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
    }

    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    @Test("a secret file holding a pattern is refused, saying what and naming the file, but not the bytes", arguments: SecretPatterns.all.map { $0.name })
    func patternRefused(name: String) throws {
        let bytes = try #require(SecretPatterns.all.first { $0.name == name }?.bytes)
        #expect(SharedSecret.pattern(in: bytes) != nil, "\(name) is not seen as a pattern")
        try Self.withDirectory { directory in
            let path = directory + "/secret"
            #expect(FileManager.default.createFile(atPath: path, contents: Data((Self.hex(bytes) + "\n").utf8), attributes: [.posixPermissions: 0o600]))
            do throws(SharedSecretError) {
                _ = try SharedSecret(contentsOfFile: path)
                Issue.record("accepted \(name)")
            } catch {
                guard case .pattern(path, _) = error else { throw error }
                #expect(error.description.hasPrefix("shared secret file \(path) does not hold 32 random bytes: "), "\(error)")
                #expect(error.description.contains("at least \(SharedSecret.minimumDistinctValues)"), "\(error)")
                #expect(!error.description.contains(Self.hex(bytes).prefix(8)), "\(error)")
            }
        }
    }

    /// SplitMix64: random-looking bytes that are the same in every run, so that a test of them cannot flake.
    struct SeededBytes {
        var state: UInt64
        mutating func next32() -> [UInt8] {
            (0..<4).flatMap { _ -> [UInt8] in
                state &+= 0x9E37_79B9_7F4A_7C15
                var z = state
                z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
                z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
                z ^= z >> 31
                return (0..<8).map { UInt8(truncatingIfNeeded: z >> (8 * $0)) }
            }
        }
    }

    @Test("random bytes pass the rule: ten thousand pseudo-random keys, and a generated secret read from its file")
    func randomPasses() throws {
        var bytes = SeededBytes(state: 2026)
        for _ in 0..<10_000 {
            let key = bytes.next32()
            #expect(SharedSecret.pattern(in: key) == nil, "\(Self.hex(key))")
        }
        try Self.withDirectory { directory in
            let path = directory + "/secret"
            try SharedSecret.generate().write(toFile: path, replacing: false)
            _ = try SharedSecret(contentsOfFile: path)
        }
    }
}

/// Patterns a person or a script might put in a secret file instead of random bytes.
enum SecretPatterns {
    static let all: [(name: String, bytes: [UInt8])] = [
        ("one byte", [UInt8](repeating: 0xAB, count: 32)),
        ("zeros", [UInt8](repeating: 0, count: 32)),
        ("two bytes alternating", (0..<32).map { $0 % 2 == 0 ? 0xDE : 0xAD }),
        ("16 random bytes twice", { let half = SharedSecretTests.randomBytes().prefix(16); return Array(half + half) }()),
        ("counting up", (0..<32).map { UInt8($0) }),
        ("counting down in threes", (0..<32).map { UInt8(255 - 3 * $0) }),
        ("a 19-byte cycle", (0..<32).map { UInt8(7 * ($0 % 19)) }),
    ]
}
