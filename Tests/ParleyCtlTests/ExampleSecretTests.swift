import Foundation
import Parley
import ParleyTestSupport
import Testing

/// The examples take parleyd's secret file (`--secret-file`): with it they reach a parleyd that requires the secret,
/// and without it such a parleyd cannot get in.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct ExampleSecretTests {
    /// A fresh secret file, owner-only, in `directory`.
    static func secretFile(in directory: ScratchDirectory) throws -> String {
        let path = directory.file("secret")
        try SharedSecret.generate().write(toFile: path, replacing: false)
        return path
    }

    @Test("listr-example --secret-file and a parleyd with the same secret connect, and parleyd reaches its drawer")
    func listrWithSecret() async throws {
        let scratch = try ScratchDirectory(prefix: "parleyd")
        let secret = try Self.secretFile(in: scratch)
        let listr = try await ParleyCtlTests.Listr(arguments: ["--secret-file", secret])
        #expect(!listr.child.stderr.contains("listr runs open"), "\(listr.child.stderr)")
        let daemon = try await ParleydProcess.start(staticPeer: listr.port, arguments: ["--secret-file", secret], in: scratch)
        try await daemon.waitForLine(containing: "LAN peers must prove the shared secret")
        let events = try ChildProcess("/usr/bin/curl", ["-sN", try #require(daemon.webURL) + "api/events"])
        _ = try await events.waitFor { $0.contains(": parley live events") ? true : nil }
        let peers = try await daemon.ctl(["peers", "--wait-for", "listr"])
        #expect(peers.status == 0, "\(peers)")
        // The drawer is declared right after the connection; if it came before the stream opened, it is listed.
        if try await !daemon.ctl(["drawer", "listr"]).stdout.contains("list.reset") {
            _ = try await events.waitFor { $0.contains("event: drawer") ? true : nil }
        }
        #expect(try await daemon.ctl(["send", "AddItemCommand", #"{"title":"milk"}"#, "--reply"]).status == 0)
        let emptied = try await daemon.ctl(["invoke", "listr", "list.reset"])
        #expect(emptied.stdout == "removed 1 item\n", "\(emptied)")
        _ = try await events.stop()
        #expect(try await daemon.stop() == 0)
        try await listr.stop()
    }

    @Test("listr-example without --secret-file says it runs open, and a parleyd that requires the secret is refused")
    func listrOpenRefused() async throws {
        let scratch = try ScratchDirectory(prefix: "parleyd")
        let listr = try await ParleyCtlTests.Listr()
        _ = try await listr.child.waitFor(in: \.stderr) { $0.contains("listr runs open") ? true : nil }
        let daemon = try await ParleydProcess.start(staticPeer: listr.port, arguments: ["--secret-file", try Self.secretFile(in: scratch)], in: scratch)
        _ = try await listr.child.waitFor(in: \.stderr) { $0.contains("the peer requires a shared secret") ? true : nil }
        #expect(try await daemon.stop() == 0)
        try await listr.stop()
    }

    @Test("listr-example refuses a secret file others may read, naming it and the fix")
    func listrBadSecretFile() async throws {
        let scratch = try ScratchDirectory(prefix: "listr")
        let secret = try Self.secretFile(in: scratch)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: secret)
        let run = try await ChildProcess.run("listr-example", ["--no-discovery", "--port", "0", "--secret-file", secret])
        #expect(run.status != 0)
        #expect(run.stderr.contains("--secret-file: shared secret file \(secret) has mode 0644") && run.stderr.contains("chmod 600"), "\(run)")
    }

    @Test("parley-example --secret-file runs its two peers with the secret, and says so")
    func parleyExampleWithSecret() async throws {
        let scratch = try ScratchDirectory(prefix: "example")
        let run = try await ChildProcess.run("parley-example", ["--secret-file", try Self.secretFile(in: scratch)])
        #expect(run.status == 0, "\(run)")
        #expect(run.stdout.contains("phone: connected to kitchen-tablet (secret proven, encrypted)"), "\(run.stdout)")
        #expect(run.stdout.contains(#"phone: the list is ["milk", "eggs"]"#), "\(run.stdout)")
        let open = try await ChildProcess.run("parley-example", [])
        #expect(open.stdout.contains("phone: connected to kitchen-tablet (open)"), "\(open.stdout)")
    }
}
