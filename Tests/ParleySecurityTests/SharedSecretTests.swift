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
            let bytes = (0..<32).map { UInt8($0) }
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
