import Foundation
import ParleyTestSupport
import Testing

/// `parleyctl secret generate`, run as the built binary.
@Suite("parleyctl secret", .timeLimit(.minutes(2)))
struct SecretCommandTests {
    static func mode(_ path: String) throws -> Int {
        (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue ?? -1
    }

    static func isSecretLine(_ text: String) -> Bool {
        text.count == 65 && text.hasSuffix("\n") && text.dropLast().allSatisfy { $0.isHexDigit && !$0.isUppercase }
    }

    @Test("secret generate writes a 0600 file and refuses to overwrite it unless --force is given")
    func generate() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("parleyctl-secret-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("secret").path

        let first = try await Child.run("parleyctl", ["secret", "generate", "--output", path])
        #expect(first.status == 0 && first.stdout == "wrote a new shared secret to \(path) (mode 0600)\n", "\(first)")
        #expect(try Self.mode(path) == 0o600)
        let original = try String(contentsOfFile: path, encoding: .utf8)
        #expect(Self.isSecretLine(original))

        let again = try await Child.run("parleyctl", ["secret", "generate", "--output", path])
        #expect(again.status == 1, "\(again)")
        #expect(again.stderr.contains("\(path) already exists") && again.stderr.contains("--force"), "\(again)")
        #expect(try String(contentsOfFile: path, encoding: .utf8) == original)

        let forced = try await Child.run("parleyctl", ["secret", "generate", "--output", path, "--force"])
        #expect(forced.status == 0, "\(forced)")
        let replaced = try String(contentsOfFile: path, encoding: .utf8)
        #expect(Self.isSecretLine(replaced) && replaced != original)
        #expect(try Self.mode(path) == 0o600)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["secret"], "no temporary file is left")
    }

    @Test("without --output the secret is printed; --force alone is a usage error")
    func printed() async throws {
        let printed = try await Child.run("parleyctl", ["secret", "generate"])
        #expect(printed.status == 0 && Self.isSecretLine(printed.stdout), "\(printed)")
        let usage = try await Child.run("parleyctl", ["secret", "generate", "--force"])
        #expect(usage.status == 2 && usage.stderr.contains("--force only applies with --output"), "\(usage)")
    }
}
