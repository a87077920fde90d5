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

        let first = try await ChildProcess.run("parleyctl", ["secret", "generate", "--output", path])
        #expect(first.status == 0 && first.stdout == "wrote a new shared secret to \(path) (mode 0600)\n", "\(first)")
        #expect(try Self.mode(path) == 0o600)
        let original = try String(contentsOfFile: path, encoding: .utf8)
        #expect(Self.isSecretLine(original))

        let again = try await ChildProcess.run("parleyctl", ["secret", "generate", "--output", path])
        #expect(again.status == 1, "\(again)")
        #expect(again.stderr.contains("\(path) already exists") && again.stderr.contains("--force"), "\(again)")
        #expect(try String(contentsOfFile: path, encoding: .utf8) == original)

        let forced = try await ChildProcess.run("parleyctl", ["secret", "generate", "--output", path, "--force"])
        #expect(forced.status == 0, "\(forced)")
        let replaced = try String(contentsOfFile: path, encoding: .utf8)
        #expect(Self.isSecretLine(replaced) && replaced != original)
        #expect(try Self.mode(path) == 0o600)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["secret"], "no temporary file is left")
    }

    @Test("without --output the secret is printed; --force alone is a usage error")
    func printed() async throws {
        let printed = try await ChildProcess.run("parleyctl", ["secret", "generate"])
        #expect(printed.status == 0 && Self.isSecretLine(printed.stdout), "\(printed)")
        let usage = try await ChildProcess.run("parleyctl", ["secret", "generate", "--force"])
        #expect(usage.status == 2 && usage.stderr.contains("--force only applies with --output"), "\(usage)")
    }

    @Test("--output - prints the secret on standard output, as everywhere a file is named; no file named - appears")
    func outputDash() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("parleyctl-secret-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        // Run inside the empty directory, where a file named "-" would appear.
        let parleyctl = PeerProcess.productsDirectory.appendingPathComponent("parleyctl").path
        let printed = try await ChildProcess.run("/bin/sh", ["-c", #"cd "$1" && exec "$0" secret generate --output -"#, parleyctl, directory.path])
        #expect(printed.status == 0 && Self.isSecretLine(printed.stdout), "\(printed)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
    }
}

extension SecretCommandTests {
    @Test("--direct --secret-file reaches a parleyd that requires the secret; without it the peer refuses")
    func directWithSecret() async throws {
        let directory = try ScratchDirectory(prefix: "pctl-secret")
        let secret = directory.file("secret")
        #expect(try await ChildProcess.run("parleyctl", ["secret", "generate", "--output", secret]).status == 0)
        let daemon = try await ParleydProcess.start(name: "secured", arguments: ["--secret-file", secret], in: directory)
        let port = daemon.port
        let peer = ["--direct", "--peer", "127.0.0.1:\(port)"]

        let member = try await ChildProcess.run("parleyctl", ["peers"] + peer + ["--secret-file", secret, "--wait", "10", "--json"])
        #expect(member.status == 0 && member.stdout.contains(#""name":"secured""#), "\(member)")

        let stranger = try await ChildProcess.run("parleyctl", ["peers"] + peer + ["--wait", "2", "--log-level", "warning", "--json"])
        #expect(!stranger.stdout.contains("secured"), "\(stranger)")
        #expect(stranger.stderr.contains("the peer requires a shared secret"), "\(stranger)")

        let missing = try await ChildProcess.run("parleyctl", ["peers"] + peer + ["--secret-file", directory.file("none")])
        #expect(missing.status == 2 && missing.stderr.contains("--secret-file: shared secret file"), "\(missing)")

        #expect(try await daemon.stop() == 0)
    }
}
