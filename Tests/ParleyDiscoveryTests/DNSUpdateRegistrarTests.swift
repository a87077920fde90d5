import Foundation
import Logging
@testable import ParleyDNSUpdate
import ParleyDiscovery
import Testing

/// The registrar's ordering of nsupdate runs, with a stand-in for nsupdate that notes when each run starts and ends
/// (the DNS server itself is tested in WideAreaLabTests; here the question is only what is sent when).
@Suite("DNS registration: the order of updates")
struct DNSUpdateRegistrarTests {
    /// A directory with an executable `nsupdate` that appends "start add|remove" and "end add|remove" to `log`, and
    /// holds a run for a second while the file `slow` exists.
    struct FakeNsupdate {
        let directory: URL
        var program: URL { directory.appendingPathComponent("nsupdate") }
        var log: URL { directory.appendingPathComponent("log") }
        var slow: URL { directory.appendingPathComponent("slow") }

        init() throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("parley-nsupdate-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let script = """
                #!/bin/sh
                kind=remove
                grep -q '^update add' && kind=add
                echo "start $kind" >> '\(directory.path)/log'
                [ -e '\(directory.path)/slow' ] && sleep 1
                echo "end $kind" >> '\(directory.path)/log'
                """
            try script.write(to: program, atomically: true, encoding: .utf8)
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: program.path)
        }

        /// A registrar that runs this stand-in for nsupdate.
        func registrar() -> DNSUpdateRegistrar {
            DNSUpdateRegistrar(
                settings: DNSUpdateSettings(domain: "parley.test", server: "127.0.0.1", keyFile: "/nonexistent", nsupdatePath: program.path),
                logger: Logger(label: "test")
            )
        }

        var lines: [String] {
            ((try? String(contentsOf: log, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        }

        /// Waits (up to 10 s) until the log has `line` `count` times.
        func waitFor(_ line: String, count: Int = 1) async throws {
            let deadline = ContinuousClock.now + .seconds(10)
            while lines.count(where: { $0 == line }) < count {
                guard ContinuousClock.now < deadline else {
                    Issue.record("nsupdate never logged \"\(line)\": \(lines)")
                    return
                }
                try await Task.sleep(for: .milliseconds(20))
            }
        }
    }

    static let advertisement = Advertisement(instanceName: "Alpha", port: 7206, txt: ["id": "a"])

    @Test("a stop during an update removes the records after it, and a registration asked for after the stop is not sent")
    func stopDuringAnUpdate() async throws {
        let nsupdate = try FakeNsupdate()
        defer { try? FileManager.default.removeItem(at: nsupdate.directory) }
        #expect(FileManager.default.createFile(atPath: nsupdate.slow.path, contents: nil))
        let registrar = nsupdate.registrar()
        registrar.register(Self.advertisement)
        try await nsupdate.waitFor("start add")

        // Stopped while that update is still on its way; then a network change asks to advertise again.
        registrar.stop()
        registrar.register(Self.advertisement)
        #expect(!registrar.isRegistering, "registering again after the stop")
        await registrar.finished()
        #expect(nsupdate.lines == ["start add", "end add", "start remove", "end remove"])
    }

    @Test("a new registration while a removal is on its way is sent after the removal")
    func registerAfterWithdraw() async throws {
        let nsupdate = try FakeNsupdate()
        defer { try? FileManager.default.removeItem(at: nsupdate.directory) }
        let registrar = nsupdate.registrar()
        registrar.register(Self.advertisement)
        try await nsupdate.waitFor("end add")

        #expect(FileManager.default.createFile(atPath: nsupdate.slow.path, contents: nil))
        registrar.deregister()
        registrar.register(Self.advertisement)
        try await nsupdate.waitFor("end add", count: 2)
        #expect(nsupdate.lines == ["start add", "end add", "start remove", "end remove", "start add", "end add"])
        registrar.stop()
        await registrar.finished()
    }
}
