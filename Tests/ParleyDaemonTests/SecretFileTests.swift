import Foundation
import Parley
import ParleyTestSupport
import Testing

/// parleyd's `secretFile`: loaded and checked at start-up, handed to the transceiver, and the start-up log says
/// whether the node runs open. Runs the built parleyd on loopback with discovery off.
@Suite("parleyd shared secret", .serialized, .timeLimit(.minutes(2)))
struct SecretFileTests {
    static func client(_ secret: SharedSecret?) -> Transceiver {
        Transceiver(configuration: TransceiverConfiguration(name: "test-client", identity: .ephemeral, listenHost: nil, sharedSecret: secret))
    }

    @Test("without a secretFile parleyd says at start-up, at notice level, that it runs OPEN")
    func openByDefault() async throws {
        let scratch = try ScratchDirectory()
        let config = try scratch.write("parleyd.json", #"{"discovery": false, "port": 0}"#)
        let daemon = try ParleydProcess(arguments: [], environment: scratch.parleydEnvironment(config: config), directory: scratch)
        defer { daemon.kill() }
        let line = try await daemon.waitForLine(containing: "parleyd runs OPEN")
        #expect(line.contains(" notice ") && line.contains("anyone on the LAN"), "\(line)")
        daemon.signal(SIGTERM)
        #expect(await daemon.waitForExit(timeout: .seconds(5)) == 0)
    }

    @Test("with a secretFile only peers that know the secret get in; the secret never reaches the log")
    func secretRequired() async throws {
        let scratch = try ScratchDirectory()
        let secret = SharedSecret.generate()
        let secretPath = scratch.url.appendingPathComponent("secret").path
        try secret.write(toFile: secretPath, replacing: false)
        let config = try scratch.write("parleyd.json", #"{"discovery": false, "port": 0}"#)
        let daemon = try ParleydProcess(
            arguments: ["--secret-file", secretPath, "--log-level", "debug"], environment: scratch.parleydEnvironment(config: config),
            directory: scratch
        )
        defer { daemon.kill() }
        let port = try await daemon.waitUntilReady().port
        let mode = try await daemon.waitForLine(containing: "LAN peers must prove the shared secret")
        #expect(mode.contains(secretPath), "\(mode)")

        let member = Self.client(secret)
        let stranger = Self.client(nil)
        try await member.start()
        try await stranger.start()
        // Throws unless the handshake, proofs included, completed.
        try await member.connect(to: Endpoint(host: "127.0.0.1", port: port))
        do {
            try await stranger.connect(to: Endpoint(host: "127.0.0.1", port: port))
            Issue.record("a peer without the secret got in")
        } catch TransceiverError.handshakeFailed(_, let error) {
            #expect(error == .secretRequiredByPeer)
        }
        await member.stop()
        await stranger.stop()

        daemon.signal(SIGTERM)
        #expect(await daemon.waitForExit(timeout: .seconds(5)) == 0)
        let log = daemon.log
        #expect(log.contains("this node requires a shared secret and the peer has none"), "\(log)")
        #expect(!log.contains(secret.fileText.trimmingCharacters(in: .newlines)))
    }

    @Test("an unusable secretFile stops start-up with status 2, naming the key and the fix", arguments: [
        ("missing", nil, "parleyctl secret generate --output"),
        ("readable", 0o644, "mode 0644"),
        ("readable", 0o644, "chmod 600"),
        ("group", 0o640, "mode 0640"),
    ] as [(String, Int?, String)])
    func unusable(name: String, mode: Int?, expected: String) async throws {
        let scratch = try ScratchDirectory()
        let path = scratch.url.appendingPathComponent(name).path
        if let mode {
            try SharedSecret.generate().write(toFile: path, replacing: false)
            try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
        }
        let config = try scratch.write("parleyd.json", #"{"discovery": false, "port": 0, "secretFile": "\#(path)"}"#)
        let daemon = try ParleydProcess(arguments: [], environment: scratch.parleydEnvironment(config: config), directory: scratch)
        defer { daemon.kill() }
        #expect(await daemon.waitForExit(timeout: .seconds(10)) == 2)
        let log = daemon.log
        #expect(log.contains("bad value for secretFile (from config file \(config)): "), "\(log)")
        #expect(log.contains(path) && log.contains(expected), "\(log)")
    }

    @Test("a secretFile holding a pattern instead of random bytes stops start-up with status 2, naming the key and the command that makes a secret")
    func patternSecret() async throws {
        let scratch = try ScratchDirectory()
        let path = try scratch.write("secret", String(repeating: "00", count: 32) + "\n")
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        let config = try scratch.write("parleyd.json", #"{"discovery": false, "port": 0, "secretFile": "\#(path)"}"#)
        let daemon = try ParleydProcess(arguments: [], environment: scratch.parleydEnvironment(config: config), directory: scratch)
        defer { daemon.kill() }
        #expect(await daemon.waitForExit(timeout: .seconds(10)) == 2)
        let log = daemon.log
        #expect(log.contains("bad value for secretFile (from config file \(config)): shared secret file \(path) does not hold 32 random bytes"), "\(log)")
        #expect(log.contains("parleyctl secret generate --output \(path) --force"), "\(log)")
    }

    @Test("a webTokenFile holding the shared secret stops start-up with status 2, naming both keys")
    func tokenIsTheSecret() async throws {
        let scratch = try ScratchDirectory()
        let secretPath = scratch.url.appendingPathComponent("secret").path
        try SharedSecret.generate().write(toFile: secretPath, replacing: false)
        let config = try scratch.write(
            "parleyd.json", #"{"discovery": false, "port": 0, "secretFile": "\#(secretPath)", "webTokenFile": "\#(secretPath)"}"#)
        let daemon = try ParleydProcess(arguments: [], environment: scratch.parleydEnvironment(config: config), directory: scratch)
        defer { daemon.kill() }
        #expect(await daemon.waitForExit(timeout: .seconds(10)) == 2)
        let log = daemon.log
        #expect(log.contains("webTokenFile \(secretPath) (from config file \(config)) holds the same key as secretFile \(secretPath)"), "\(log)")
    }

    @Test("a relative secretFile is refused like any bad value, naming what is allowed")
    func relativePath() async throws {
        let scratch = try ScratchDirectory()
        let config = try scratch.write("parleyd.json", #"{"discovery": false}"#)
        let daemon = try ParleydProcess(
            arguments: [], environment: scratch.parleydEnvironment(config: config, ["PARLEY_SECRET_FILE": "secret"]), directory: scratch
        )
        defer { daemon.kill() }
        #expect(await daemon.waitForExit(timeout: .seconds(10)) == 2)
        #expect(daemon.log.contains(#"bad value for secretFile: "secret" (from environment variable PARLEY_SECRET_FILE)"#), "\(daemon.log)")
        #expect(daemon.log.contains("an absolute path"), "\(daemon.log)")
    }

    @Test("a secret passed by systemd (LoadCredential=, under $CREDENTIALS_DIRECTORY) is accepted with its ACL-style mode")
    func systemdCredential() async throws {
        let scratch = try ScratchDirectory()
        let credentials = scratch.url.appendingPathComponent("credentials").path
        try FileManager.default.createDirectory(atPath: credentials, withIntermediateDirectories: true)
        let path = credentials + "/secret"
        try SharedSecret.generate().write(toFile: path, replacing: false)
        // What `stat` shows for systemd's root-owned 0400 file with an ACL granting the service's user read access.
        try FileManager.default.setAttributes([.posixPermissions: 0o440], ofItemAtPath: path)
        let config = try scratch.write("parleyd.json", #"{"discovery": false, "port": 0, "secretFile": "\#(path)"}"#)

        let outside = try ParleydProcess(arguments: [], environment: scratch.parleydEnvironment(config: config), directory: scratch)
        defer { outside.kill() }
        #expect(await outside.waitForExit(timeout: .seconds(10)) == 2, "without CREDENTIALS_DIRECTORY the file is too open")

        let daemon = try ParleydProcess(
            arguments: [], environment: scratch.parleydEnvironment(config: config, ["CREDENTIALS_DIRECTORY": credentials]), directory: scratch
        )
        defer { daemon.kill() }
        try await daemon.waitForLine(containing: "LAN peers must prove the shared secret")
        daemon.signal(SIGTERM)
        #expect(await daemon.waitForExit(timeout: .seconds(5)) == 0)
    }
}
