import Foundation
import ParleyTestSupport
import Testing

/// scripts/install into a staging directory (DESTDIR), with the binaries this test run built.
@Suite("Install and uninstall", .timeLimit(.minutes(2)))
struct InstallTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    static func script(_ arguments: [String], destdir: String) async throws -> (status: Int32, output: String) {
        try await PeerProcess.offPool {
            let process = Process()
            process.executableURL = repository.appendingPathComponent("scripts/install")
            process.arguments = arguments
            process.environment = ["DESTDIR": destdir, "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"]
            let pipe = Pipe.forChild()
            process.standardOutput = pipe
            process.standardError = pipe
            try process.runWithDefaultSignalMask()
            let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            return (process.terminationStatus, output)
        }
    }

    @Test("installs binaries, the unit, a default configuration, completions and the man page; uninstall removes them")
    func installAndUninstall() async throws {
        let scratch = try ScratchDirectory()
        let stage = scratch.url.appendingPathComponent("stage").path
        let prefix = "/opt/parley-test"
        let installed = try await Self.script(["--prefix", prefix, "--bin-dir", PeerProcess.productsDirectory.path], destdir: stage)
        #expect(installed.status == 0, "\(installed.output)")
        let expected = [
            "bin/parleyd", "bin/parleyctl", "lib/systemd/system/parleyd.service",
            "share/bash-completion/completions/parleyctl", "share/zsh/site-functions/_parleyctl",
            "share/fish/vendor_completions.d/parleyctl.fish", "share/man/man1/parleyctl.1", "share/man/man8/parleyd.8", "etc/parley/parleyd.json",
        ]
        for file in expected {
            #expect(FileManager.default.fileExists(atPath: stage + prefix + "/" + file), "\(file) missing")
        }
        let unit = try String(contentsOfFile: stage + prefix + "/lib/systemd/system/parleyd.service", encoding: .utf8)
        #expect(unit.contains("ExecStart=\"\(prefix)/bin/parleyd\"\n"))

        // The installed default configuration is one parleyd accepts.
        let config = stage + prefix + "/etc/parley/parleyd.json"
        let daemon = try ParleydProcess(
            arguments: ["--no-discovery", "--port", "0"], environment: scratch.parleydEnvironment(config: config), directory: scratch
        )
        _ = try await daemon.waitUntilReady()
        daemon.signal(SIGTERM)
        let status = await daemon.waitForExit(timeout: .seconds(5))
        #expect(status == 0, "parleyd did not exit with 0 within 5 s of SIGTERM (status: \(status.map(String.init) ?? "still running")); log:\n\(daemon.log)")

        let removed = try await Self.script(["--prefix", prefix, "--uninstall"], destdir: stage)
        #expect(removed.status == 0, "\(removed.output)")
        for file in expected {
            #expect(!FileManager.default.fileExists(atPath: stage + prefix + "/" + file), "\(file) still there")
        }
    }
}
