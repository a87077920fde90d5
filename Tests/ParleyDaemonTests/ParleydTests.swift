import Foundation
import Parley
import ParleyControl
import ParleyDaemon
import ParleyTestSupport
import Testing

/// These tests run the built `parleyd` on loopback with discovery off: no avahi-daemon, no multicast.
@Suite("parleyd", .serialized)
struct ParleydTests {
    // MARK: (a) configuration errors

    @Test("--help names parleyd and its man page section's options; --version prints the version, both with status 0")
    func helpAndVersion() async throws {
        let help = try await ChildProcess.run("parleyd", ["--help"])
        #expect(help.status == 0 && help.stdout.contains("USAGE: parleyd"), "\(help)")
        let version = try await ChildProcess.run("parleyd", ["--version"])
        #expect(version.status == 0 && version.stdout == Parleyd.version + "\n", "\(version)")
    }

    @Test("the man page (generated: scripts/generate-docs) has every option --help lists, SIGNALS, ENVIRONMENT and FILES, and no subcommands")
    func manPage() async throws {
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let page = try String(contentsOf: repository.appendingPathComponent("docs/man/parleyd.8"), encoding: .utf8)
        let help = try await ChildProcess.run("parleyd", ["--help"])
        let options = Set(help.stdout.split(whereSeparator: { " \n,;.</()".contains($0) })
            .filter { $0.hasPrefix("--") && $0.count > 2 }.map { String($0.drop { $0 == "-" }) })
        #expect(options.contains("control-socket") && options.contains("version"), "\(options)")
        for option in options {
            // `.It Fl -port Ar port`; `.It Fl h , -help`.
            #expect(page.contains("Fl -\(option)") || page.contains(" , -\(option)"), "docs/man/parleyd.8 lacks --\(option): run scripts/generate-docs")
        }
        for section in [".Sh SIGNALS", ".Sh ENVIRONMENT", ".Sh FILES", ".Sh \"EXIT STATUS\"", ".Sh SEE ALSO"] {
            #expect(page.contains("\n\(section)\n"), "\(section)")
        }
        for name in ["SIGHUP", "SIGTERM", "PARLEY_CONFIG", "/etc/parley/parleyd.json", "parleyd.lock", "parleyd.sock"] {
            #expect(page.contains(name), "\(name)")
        }
        // parleyd has no subcommands (the parser's implicit `help` is not one to document).
        #expect(!page.contains("subcommand"), "\(page)")
        #expect(page.contains(".Dt PARLEYD 8"))
    }

    @Test("an unknown key in the config file stops start-up with status 2, naming the key")
    func unknownKey() async throws {
        let scratch = try ScratchDirectory()
        let config = try scratch.write("parleyd.json", #"{"discovery": false, "prot": 7300}"#)
        let daemon = try ParleydProcess(arguments: [], environment: scratch.parleydEnvironment(config: config), directory: scratch)
        defer { daemon.kill() }
        #expect(await daemon.waitForExit(timeout: .seconds(10)) == 2)
        #expect(daemon.log.contains(#"unknown key "prot""#), "\(daemon.log)")
        #expect(daemon.log.contains(config), "the message names the file: \(daemon.log)")
    }

    @Test("unknown PARLEY_ environment variables are named in one warning, and parleyd starts")
    func unknownEnvironmentVariable() async throws {
        let daemon = try await ParleydProcess.start(environment: ["PARLEY_PROT": "7300", "PARLEY_NETNS_STATE": "/tmp/x"])
        let warnings = daemon.log.split(separator: "\n").filter { $0.contains("name no setting of parleyd") }
        #expect(warnings.count == 1, "\(daemon.log)")
        #expect(warnings.first?.contains("PARLEY_NETNS_STATE, PARLEY_PROT") == true, "\(daemon.log)")
        #expect(try await daemon.stop() == 0)
    }

    @Test("a bad value names the key, the value and what is allowed", arguments: [
        (#"{"port": "seventy"}"#, [String](), "port", #""seventy""#, "0 to 65535"),
        (#"{"port": 70000}"#, [], "port", "70000", "0 to 65535"),
        (#"{}"#, ["--log-level", "loud"], "logLevel", #""loud""#, "trace, debug, info"),
        (#"{"autoConnect": "some"}"#, [], "autoConnect", #""some""#, "all or none"),
        (#"{"staticPeers": ["nas.local"]}"#, [], "staticPeers", #""nas.local""#, "host:port"),
    ])
    func badValue(file: String, flags: [String], key: String, value: String, allowed: String) async throws {
        let scratch = try ScratchDirectory()
        let config = try scratch.write("parleyd.json", file)
        let daemon = try ParleydProcess(
            arguments: ["--no-discovery"] + flags, environment: scratch.parleydEnvironment(config: config), directory: scratch
        )
        defer { daemon.kill() }
        #expect(await daemon.waitForExit(timeout: .seconds(10)) == 2)
        let log = daemon.log
        #expect(log.contains("bad value for \(key): \(value)"), "\(log)")
        #expect(log.contains(allowed), "\(log)")
    }

    @Test("a config file that is not JSON, or a missing --config file, is a configuration error")
    func unreadableFile() async throws {
        let scratch = try ScratchDirectory()
        let config = try scratch.write("parleyd.json", "port: 7300\n")
        let daemon = try ParleydProcess(arguments: [], environment: scratch.parleydEnvironment(config: config), directory: scratch)
        defer { daemon.kill() }
        #expect(await daemon.waitForExit(timeout: .seconds(10)) == 2)
        #expect(daemon.log.contains("not a JSON object"), "\(daemon.log)")

        let missing = try ParleydProcess(
            arguments: ["--config", scratch.url.appendingPathComponent("nope.json").path], environment: [:], directory: scratch
        )
        defer { missing.kill() }
        #expect(await missing.waitForExit(timeout: .seconds(10)) == 2)
        #expect(missing.log.contains("no such file"), "\(missing.log)")
    }

    // MARK: (b) precedence

    @Test("flags override the environment, which overrides the file, which overrides the defaults")
    func precedence() async throws {
        let scratch = try ScratchDirectory()
        let (filePort, environmentPort, flagPort) = (try unusedPort(), try unusedPort(), try unusedPort())
        let config = try scratch.write(
            "parleyd.json", #"{"discovery": false, "name": "from-file", "port": \#(filePort), "logLevel": "debug"}"#
        )
        let environment = scratch.parleydEnvironment(config: config, ["PARLEY_PORT": "\(environmentPort)", "PARLEY_NAME": "from-env"])

        // All three layers: the flag wins for port; name comes from the environment; logLevel from the file.
        let all = try ParleydProcess(arguments: ["--port", "\(flagPort)"], environment: environment, directory: scratch)
        defer { all.kill() }
        let ready = try await all.waitUntilReady()
        #expect(ready.port == flagPort && ready.name == "from-env", "\(ready)")
        #expect(all.log.contains(" debug "), "logLevel from the file lets debug lines through: \(all.log)")
        all.signal(SIGTERM)
        #expect(await all.waitForExit(timeout: .seconds(5)) == 0)

        // Environment over file.
        let environmentOnly = try ParleydProcess(arguments: [], environment: environment, directory: scratch)
        defer { environmentOnly.kill() }
        #expect(try await environmentOnly.waitUntilReady().port == environmentPort)
        environmentOnly.signal(SIGTERM)
        #expect(await environmentOnly.waitForExit(timeout: .seconds(5)) == 0)

        // File over defaults.
        let fileOnly = try ParleydProcess(arguments: [], environment: scratch.parleydEnvironment(config: config), directory: scratch)
        defer { fileOnly.kill() }
        let fileReady = try await fileOnly.waitUntilReady()
        #expect(fileReady.port == filePort && fileReady.name == "from-file", "\(fileReady)")
        fileOnly.signal(SIGTERM)
        #expect(await fileOnly.waitForExit(timeout: .seconds(5)) == 0)
    }

    @Test("the peer id is persisted in the data directory")
    func peerIDPersisted() async throws {
        let scratch = try ScratchDirectory()
        let config = try scratch.write("parleyd.json", #"{"discovery": false, "port": 0}"#)
        let data = scratch.url.appendingPathComponent("state").path
        var ids: [String] = []
        for _ in 0..<2 {
            let daemon = try ParleydProcess(arguments: ["--data-directory", data], environment: scratch.parleydEnvironment(config: config), directory: scratch)
            defer { daemon.kill() }
            ids.append(try #require(try await daemon.waitUntilReady().peerId))
            daemon.signal(SIGTERM)
            #expect(await daemon.waitForExit(timeout: .seconds(5)) == 0)
        }
        let stored = try String(contentsOfFile: data + "/peer-id", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(ids == [stored, stored])
    }

    // MARK: (c) systemd notify, (d) SIGTERM

    @Test("READY=1, STATUS= on peer changes and STOPPING=1 reach NOTIFY_SOCKET", arguments: ["path", "abstract"])
    func notifySocket(kind: String) async throws {
        let scratch = try ScratchDirectory()
        let address = kind == "path" ? scratch.url.appendingPathComponent("notify.sock").path : "@parleyd-test-\(UUID().uuidString.prefix(8))"
        let notify = try FakeNotifySocket(address: address)
        let config = try scratch.write("parleyd.json", #"{"port": 0}"#)
        let daemon = try ParleydProcess(
            arguments: ["--no-discovery"], environment: scratch.parleydEnvironment(config: config, ["NOTIFY_SOCKET": address]),
            directory: scratch
        )
        defer { daemon.kill() }
        let port = try await daemon.waitUntilReady().port
        try await notify.waitFor("READY=1") { $0 == "READY=1" }
        #expect(notify.lines.contains("STATUS=0 peers connected"), "\(notify.lines)")
        #expect(notify.lines.contains("MAINPID=\(daemon.pid)"), "\(notify.lines)")

        // A peer connects: "1 peer" (singular); a second: "2 peers"; both leave: back to 0.
        func lanPeer(_ name: String) async throws -> Transceiver {
            let client = Transceiver(configuration: TransceiverConfiguration(name: name, identity: .ephemeral, listenHost: nil))
            try await client.start()
            try await client.connect(to: Endpoint(host: "127.0.0.1", port: port))
            return client
        }
        let client = try await lanPeer("test-client")
        try await notify.waitFor("STATUS=1") { $0 == "STATUS=1 peer connected" }
        let second = try await lanPeer("test-client-2")
        try await notify.waitFor("STATUS=2") { $0 == "STATUS=2 peers connected" }
        // A local tool on the control socket is not a peer to an operator: while it stays connected, the LAN peers
        // leaving still bring the count to 0 (were it counted, STATUS would say 3, then 2, then 1).
        let tool = Transceiver(configuration: TransceiverConfiguration(name: "parleyctl", identity: .ephemeral, listenHost: nil))
        try await tool.start()
        let daemonPeer = try await tool.connect(toUnixSocket: scratch.url.appendingPathComponent("parleyd.sock").path)
        _ = try await tool.request(Control.Status(), from: daemonPeer, expecting: Control.StatusReport.self)
        await second.stop()
        await client.stop()
        try await notify.waitForLines("STATUS=0 after the peers left") { lines in
            lines.filter { $0.hasPrefix("STATUS=") }.last == "STATUS=0 peers connected"
        }
        #expect(!notify.lines.contains { $0.hasPrefix("STATUS=3 ") }, "\(notify.lines)")
        #expect(!notify.lines.contains("STATUS=1 peers connected"), "\(notify.lines)")
        await tool.stop()

        daemon.signal(SIGTERM)
        #expect(await daemon.waitForExit(timeout: .seconds(5)) == 0)
        #expect(notify.lines.contains("STOPPING=1"), "\(notify.lines)")
    }

    @Test("watchdog pings come every WATCHDOG_USEC/2")
    func watchdog() async throws {
        let scratch = try ScratchDirectory()
        let address = scratch.url.appendingPathComponent("notify.sock").path
        let notify = try FakeNotifySocket(address: address)
        let config = try scratch.write("parleyd.json", #"{"discovery": false, "port": 0}"#)
        let daemon = try ParleydProcess(
            arguments: [], environment: scratch.parleydEnvironment(config: config, ["NOTIFY_SOCKET": address, "WATCHDOG_USEC": "1000000"]),
            directory: scratch
        )
        defer { daemon.kill() }
        _ = try await daemon.waitUntilReady()
        // Five pings, due every 500 ms (the bound only keeps a broken watchdog from hanging the test).
        try await notify.waitForLines("five watchdog pings", timeout: .seconds(20)) { lines in
            lines.filter { $0 == "WATCHDOG=1" }.count >= 5
        }
        let arrivals = notify.arrivals(of: "WATCHDOG=1")
        let gaps = zip(arrivals.dropFirst(), arrivals).map { $0 - $1 }.sorted()
        // Timers never fire early, so no gap is much shorter than half of WATCHDOG_USEC; and the typical gap (the
        // median, which one late tick on a loaded machine does not move) is well inside WATCHDOG_USEC, after which
        // systemd would kill the service.
        #expect(gaps.first.map { $0 >= .milliseconds(400) } == true, "\(gaps)")
        #expect(gaps[gaps.count / 2] < .milliseconds(900), "\(gaps)")
        daemon.signal(SIGTERM)
        #expect(await daemon.waitForExit(timeout: .seconds(5)) == 0)
    }

    @Test("SIGTERM and SIGINT end parleyd with status 0 within 2 s", arguments: [SIGTERM, SIGINT])
    func gracefulShutdown(signal: Int32) async throws {
        let scratch = try ScratchDirectory()
        let config = try scratch.write("parleyd.json", #"{"discovery": false, "port": 0}"#)
        let daemon = try ParleydProcess(arguments: [], environment: scratch.parleydEnvironment(config: config), directory: scratch)
        defer { daemon.kill() }
        _ = try await daemon.waitUntilReady()
        let start = ContinuousClock.now
        daemon.signal(signal)
        let status = await daemon.waitForExit(timeout: .seconds(2))
        #expect(status == 0, "exit status \(String(describing: status)) after \(ContinuousClock.now - start); log:\n\(daemon.log)")
        #expect(daemon.log.contains("parleyd stopped"))
    }

    // MARK: (e) logs

    @Test("with JOURNAL_STREAM set, every line carries its journald priority; metadata stays key=value")
    func journalPrefixes() async throws {
        let scratch = try ScratchDirectory()
        let config = try scratch.write("parleyd.json", #"{"discovery": false, "port": 0}"#)
        let daemon = try ParleydProcess(
            arguments: [], environment: scratch.parleydEnvironment(config: config, ["JOURNAL_STREAM": "8:12345"]), directory: scratch
        )
        defer { daemon.kill() }
        let ready = try await daemon.waitForLine(containing: "parleyd ready")
        #expect(ready.hasPrefix("<5>parleyd: parleyd ready "), "notice is priority 5: \(ready)")
        #expect(logField("port", in: ready).flatMap(Int.init) != nil)
        daemon.signal(SIGTERM)
        #expect(await daemon.waitForExit(timeout: .seconds(5)) == 0)
        let lines = daemon.log.split(separator: "\n")
        #expect(lines.contains { $0.hasPrefix("<6>") }, "info lines are priority 6")
        for line in lines {
            #expect(line.range(of: #"^<[2-7]>"#, options: .regularExpression) != nil, "no priority: \(line)")
        }
    }

    @Test("without JOURNAL_STREAM, lines are timestamped and carry the level")
    func humanLines() async throws {
        let scratch = try ScratchDirectory()
        let config = try scratch.write("parleyd.json", #"{"discovery": false, "port": 0}"#)
        let daemon = try ParleydProcess(arguments: [], environment: scratch.parleydEnvironment(config: config), directory: scratch)
        defer { daemon.kill() }
        let ready = try await daemon.waitForLine(containing: "parleyd ready")
        #expect(ready.range(of: #"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z notice parleyd: parleyd ready "#, options: .regularExpression) != nil, "\(ready)")
        daemon.signal(SIGTERM)
        #expect(await daemon.waitForExit(timeout: .seconds(5)) == 0)
    }

    @Test("once ready, parleyd writes one JSON line to standard output, its keys in the documented order, and nothing else")
    func readinessLine() async throws {
        let scratch = try ScratchDirectory()
        let config = try scratch.write("parleyd.json", #"{"discovery": false, "port": 0, "name": "ready-test"}"#)
        let daemon = try ParleydProcess(arguments: [], environment: scratch.parleydEnvironment(config: config), directory: scratch)
        defer { daemon.kill() }
        let ready = try await daemon.waitUntilReady()
        let logged = try await daemon.waitForLine(containing: "parleyd ready")
        #expect(ready.pid == daemon.pid && ready.name == "ready-test" && ready.discovery == "off")
        #expect(ready.port == logField("port", in: logged).flatMap(Int.init) && ready.peerId == logField("peer-id", in: logged))
        #expect(ready.controlSocket == scratch.file("parleyd.sock") && ready.dataDirectory == logField("data-directory", in: logged))
        #expect(ready.web.map { $0.hasPrefix("http://127.0.0.1:") && logged.contains("web=\($0)") } == true, "\(ready) / \(logged)")
        let keys = daemon.stdout.split(separator: "\n").first.map { line in
            line.matches(of: /"(\w+)":/).map { String($0.1) }
        }
        #expect(keys == ["parleyd", "pid", "port", "peerId", "name", "controlSocket", "web", "otlp", "dataDirectory", "discovery"])
        #expect(try await daemon.stop() == 0)
        #expect(daemon.stdout.split(separator: "\n").count == 1, "standard output: \(daemon.stdout)")
    }

    @Test("with the web debugger off, the readiness line's web is null")
    func readinessLineWithoutWeb() async throws {
        let daemon = try await ParleydProcess.start(arguments: ["--web-listen", "off"])
        #expect(daemon.webURL == nil)
        #expect(daemon.stdout.contains(#""web":null"#), "\(daemon.stdout)")
        #expect(try await daemon.stop() == 0)
    }

    // MARK: SIGHUP

    @Test("SIGHUP applies a new log level and names the keys that need a restart")
    func reload() async throws {
        let scratch = try ScratchDirectory()
        let port = try unusedPort()
        let config = try scratch.write("parleyd.json", #"{"discovery": false, "port": \#(port), "logLevel": "info"}"#)
        let daemon = try ParleydProcess(arguments: [], environment: scratch.parleydEnvironment(config: config), directory: scratch)
        defer { daemon.kill() }
        _ = try await daemon.waitUntilReady()

        _ = try scratch.write("parleyd.json", #"{"discovery": false, "port": \#(port + 1), "logLevel": "warning", "name": "renamed"}"#)
        daemon.signal(SIGHUP)
        let restart = try await daemon.waitForLine(containing: "restart parleyd to apply")
        #expect(logField("keys", in: restart) == "name,port", "\(restart)")

        _ = try scratch.write("parleyd.json", #"{"discovery": false, "port": "bad"}"#)
        daemon.signal(SIGHUP)
        try await daemon.waitForLine(containing: "reload failed")
        #expect(daemon.isRunning, "a bad configuration on reload does not stop the daemon")

        daemon.signal(SIGTERM)
        #expect(await daemon.waitForExit(timeout: .seconds(5)) == 0)
        // At warning, the transceiver's info lines (e.g. "parley transceiver stopping") no longer appear.
        let afterReload = daemon.log.components(separatedBy: "restart parleyd to apply").last ?? ""
        #expect(!afterReload.contains(" info "), "info lines after the level went to warning:\n\(afterReload)")
    }

    // MARK: (f) the unit file

    @Test("systemd-analyze verify accepts systemd/parleyd.service")
    func unitFile() async throws {
        let analyze = "/usr/bin/systemd-analyze"
        guard FileManager.default.isExecutableFile(atPath: analyze) else {
            if ProcessInfo.processInfo.environment["CI"] == "true" {
                Issue.record("systemd-analyze is missing (Debian package systemd) and CI=true")
                return
            }
            try Test.cancel("skipped: systemd-analyze is not installed (Debian package systemd)")
        }
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let unit = try String(contentsOf: repository.appendingPathComponent("systemd/parleyd.service"), encoding: .utf8)
        #expect(unit.contains("ExecStart=/usr/local/bin/parleyd\n"))
        #expect(unit.contains("Type=notify\n"))
        // The installed path does not exist here: verify a copy that starts the binary just built.
        let scratch = try ScratchDirectory()
        let built = PeerProcess.productsDirectory.appendingPathComponent("parleyd").path
        let copy = try scratch.write(
            "parleyd.service", unit.replacingOccurrences(of: "ExecStart=/usr/local/bin/parleyd", with: "ExecStart=\(built)")
        )
        let verify = try await ChildProcess.run(analyze, ["verify", copy])
        let text = verify.stdout + verify.stderr
        #expect(verify.status == 0, "systemd-analyze verify: \(text)")
        #expect(text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, "warnings: \(text)")
    }
}
