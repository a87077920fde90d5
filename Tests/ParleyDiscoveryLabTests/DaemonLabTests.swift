import Foundation
import ParleyTestSupport
import Synchronization
import Testing

/// parleyd, parleyctl and listr-example with discovery ON, inside the two-host lab, as on a real LAN: each host
/// has its own avahi-daemon, and the products find each other through it. Sockets, data directories and config
/// files live under /run/pd inside the host (a private tmpfs per host). Every process runs inside the lab and
/// dies with it; every wait polls.
@Suite("parleyd and parleyctl in a two-host lab", .serialized, .timeLimit(.minutes(3)))
struct DaemonLabTests {
    static let directory = "/run/pd"
    static let socket = "/run/pd/parleyd.sock"

    /// The products, built next to the probe (`swift build --build-tests` / `swift test` build every product).
    static func binary(_ name: String) throws -> String {
        let path = URL(fileURLWithPath: NetnsLab.probePath).deletingLastPathComponent().appendingPathComponent(name).path
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw NetnsLab.CommandFailed(command: [path], status: -1, output: "\(name) was not built (looked at \(path))")
        }
        return path
    }

    /// A process inside a lab host, its stdout and stderr kept as text, its PID inside the host known.
    final class LabProcess: Sendable {
        struct Timeout: Error, CustomStringConvertible {
            var waitingFor: String
            var stdout: String
            var stderr: String
            var description: String { "timed out waiting for \(waitingFor)\nstdout:\n\(stdout)\nstderr:\n\(stderr)" }
        }

        private struct Output {
            var stdout: [UInt8] = []
            var stderr: [UInt8] = []
            var closed = 0

            var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
            /// Standard error without the wrapper's `lab-pid=` line.
            var stderrText: String {
                String(decoding: stderr, as: UTF8.self)
                    .split(separator: "\n", omittingEmptySubsequences: false).filter { !$0.hasPrefix("lab-pid=") }
                    .joined(separator: "\n")
            }
        }

        let command: [String]
        private let process: Subprocess
        /// Both streams as they arrive (reader threads); waits are woken by the output they wait for. Finished once
        /// both pipes are closed, which is when the process has ended.
        private let output = Observed(Output())

        convenience init(_ lab: NetnsLab, _ host: NetnsLab.Host, _ command: [String]) throws {
            try self.init(script: NetnsLab.script, lab: lab.name, host: host.rawValue, command)
        }

        /// A process inside host `host` of lab `lab` built by `script` (parley-netns.sh or parley-dns-lab.sh).
        init(script: String, lab: String, host: String, _ command: [String]) throws {
            self.command = command
            // The shell prints its PID inside the host, then becomes the command (same PID).
            process = try Subprocess(
                [script, "exec", lab, host, "sh", "-c", #"echo "lab-pid=$$" >&2; exec "$@""#, "sh"] + command
            )
            for (fd, isStdout) in [(process.stdoutFD, true), (process.stderrFD, false)] {
                Thread.detachNewThread { [process, output] in
                    _ = process
                    var buffer = [UInt8](repeating: 0, count: 4096)
                    while true {
                        let count = read(fd, &buffer, buffer.count)
                        if count < 0 && errno == EINTR { continue }
                        guard count > 0 else { break }
                        let chunk = Array(buffer[..<count])
                        output.update { if isStdout { $0.stdout += chunk } else { $0.stderr += chunk } }
                    }
                    output.update { $0.closed += 1 }
                    if output.value.closed == 2 { output.finish() }
                }
            }
        }

        var stdout: String { output.value.stdoutText }
        var stderr: String { output.value.stderrText }
        var isRunning: Bool { process.isRunning }

        /// The exit status once the process has ended and both pipes are drained; nil before.
        var exitStatus: Int32? {
            guard output.value.closed == 2 else { return nil }
            return process.terminationStatus
        }

        /// The PID inside the host (for `kill` run there).
        func hostPID() async throws -> String {
            try await waitFor("its PID", timeout: .seconds(5)) { _, _ in nil as String? } rawStderr: { raw in
                raw.split(separator: "\n").first { $0.hasPrefix("lab-pid=") }.map { String($0.dropFirst(8)) }
            }
        }

        /// Waits until `probe(stdout, stderr)` returns a value: woken by the output that makes it.
        @discardableResult
        func waitFor<T: Sendable>(
            _ what: String, timeout: Duration = .seconds(10), _ probe: @escaping @Sendable (String, String) -> T?,
            rawStderr: @escaping @Sendable (String) -> T? = { _ in nil }
        ) async throws -> T {
            do {
                return try await output.wait(for: what, timeout: timeout) { output in
                    probe(output.stdoutText, output.stderrText) ?? rawStderr(String(decoding: output.stderr, as: UTF8.self))
                }
            } catch where error is ObservedFinished || error is TestTimeout {
                let state = exitStatus.map { " (exited with \($0))" } ?? ""
                throw Timeout(waitingFor: what + state, stdout: stdout, stderr: stderr)
            }
        }

        /// For parleyd: waits for its readiness line on standard output (docs/operations.md, "Readiness").
        @discardableResult
        func waitUntilParleydReady(timeout: Duration = .seconds(15)) async throws -> ParleydReadiness {
            try await waitFor("parleyd's readiness line", timeout: timeout) { out, _ in ParleydReadiness.find(in: out) }
        }

        func waitForLog(_ text: String, timeout: Duration = .seconds(10)) async throws {
            try await waitFor("'\(text)' on stderr", timeout: timeout) { _, err in err.contains(text) ? true : nil }
        }

        /// Waits for the end: both pipes closed, then the exit status; nil if it still runs after `timeout`.
        func waitForExit(timeout: Duration) async throws -> Int32? {
            await output.waitUntilFinished(timeout: timeout)
            guard output.isFinished else { return nil }
            let process = self.process
            return try await PeerProcess.offPool { process.waitForExit() }
        }
    }

    struct Result: CustomStringConvertible {
        var status: Int32
        var stdout: String
        var stderr: String
        var seconds: Double
        var description: String { "status \(status) after \(String(format: "%.2f", seconds)) s\nstdout: \(stdout)\nstderr: \(stderr)" }
    }

    /// Runs a command inside `host` to its end, polling; a command still running after `timeout` is an error.
    static func run(
        _ lab: NetnsLab, _ host: NetnsLab.Host, _ command: [String], timeout: Duration = .seconds(30)
    ) async throws -> Result {
        let start = ContinuousClock.now
        let process = try LabProcess(lab, host, command)
        guard let status = try await process.waitForExit(timeout: timeout) else {
            throw LabProcess.Timeout(
                waitingFor: "\(command.joined(separator: " ")) to end", stdout: process.stdout, stderr: process.stderr)
        }
        let elapsed = ContinuousClock.now - start
        return Result(
            status: status, stdout: process.stdout, stderr: process.stderr,
            seconds: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    }

    static func parleyctl(
        _ lab: NetnsLab, _ host: NetnsLab.Host, _ arguments: [String], timeout: Duration = .seconds(30)
    ) async throws -> Result {
        try await run(lab, host, [try binary("parleyctl")] + arguments, timeout: timeout)
    }

    /// parleyd inside `host`, discovery on (the default), socket and data under /run/pd, an empty config file
    /// (so the machine's /etc/parley is never read). Returns once it is ready.
    static func parleyd(
        _ lab: NetnsLab, _ host: NetnsLab.Host, _ extra: [String] = [], logLevel: String = "info"
    ) async throws -> LabProcess {
        try await lab.exec(host, ["sh", "-c", "mkdir -p \(directory) && echo '{}' > \(directory)/parleyd.json"])
        let daemon = try LabProcess(
            lab, host,
            ["env", "PARLEY_CONFIG=\(directory)/parleyd.json", try binary("parleyd"),
             "--control-socket", socket, "--data-directory", directory, "--log-level", logLevel] + extra)
        try await daemon.waitUntilParleydReady()
        return daemon
    }

    /// listr-example inside `host`, discovery on (it advertises; auto-connect none), its list under /run/pd.
    static func listr(_ lab: NetnsLab, _ host: NetnsLab.Host) async throws -> LabProcess {
        try await lab.exec(host, ["mkdir", "-p", directory])
        let listr = try LabProcess(
            lab, host,
            ["env", "XDG_STATE_HOME=\(directory)", try binary("listr-example"), "--data", "\(directory)/list.json"])
        try await listr.waitFor("listr ready", timeout: .seconds(15)) { out, err in
            (out + err).contains("listr ready on port") ? true : nil
        }
        return listr
    }

    /// The `name` fields of `parleyctl peers --json` through the daemon of `host`: connected peers, or (with
    /// `connected: false`) those only known from discovery.
    static func peerNames(_ lab: NetnsLab, _ host: NetnsLab.Host, connected: Bool = true) async throws -> [String] {
        let result = try await parleyctl(lab, host, ["peers", "--json", "--socket", socket], timeout: .seconds(10))
        guard result.status == 0 else { throw NetnsLab.CommandFailed(command: ["parleyctl peers"], status: result.status, output: "\(result)") }
        return names(in: result.stdout, connected: connected)
    }

    static func names(in listing: String, connected: Bool = true) -> [String] {
        listing.split(separator: "\n").compactMap { line in
            let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            return object?["connected"] as? Bool == connected ? object?["name"] as? String : nil
        }
    }

    /// The connected peers of parleyd on `host` once `name` is among them: `parleyctl peers --wait-for` returns
    /// when parleyd's peer gate opens for it.
    static func waitForPeer(_ lab: NetnsLab, _ host: NetnsLab.Host, _ name: String, timeout: Duration) async throws -> [String] {
        let result = try await parleyctl(
            lab, host, ["peers", "--json", "--wait-for", name, "--wait", "\(timeout.components.seconds)", "--socket", socket],
            timeout: timeout + .seconds(10))
        if result.status != 0 { Issue.record("parleyd on \(host) did not list \(name) within \(timeout): \(result)") }
        return names(in: result.stdout)
    }

    /// The lines of `avahi-browse -r -p -t _debug._tcp` on `host` that are resolved services named `instance`.
    static func browse(_ lab: NetnsLab, _ host: NetnsLab.Host, _ instance: String) async throws -> [String] {
        let result = try await run(lab, host, ["avahi-browse", "-r", "-p", "-t", "_debug._tcp"], timeout: .seconds(15))
        #expect(result.status == 0, "\(result)")
        return browseLines(result.stdout, "=", instance)
    }

    /// The lines of `avahi-browse -p` output of one kind (`=` resolved, `-` removed) about `instance`.
    static func browseLines(_ output: String, _ kind: String, _ instance: String) -> [String] {
        output.split(separator: "\n").map(String.init).filter {
            $0.hasPrefix(kind + ";") && $0.split(separator: ";", omittingEmptySubsequences: false).dropFirst(3).first == Substring(instance)
        }
    }

    static func seconds(since start: ContinuousClock.Instant) -> Double {
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    // MARK: - Tests

    @Test("parleyd on A and parleyd on B find each other through avahi-daemon and connect")
    func daemonsFindEachOther() async throws {
        try await NetnsLab.with { lab in
            let a = try await Self.parleyd(lab, .a)
            let b = try await Self.parleyd(lab, .b)
            let start = ContinuousClock.now
            let onB = try await Self.waitForPeer(lab, .b, "hosta", timeout: .seconds(10))
            let onA = try await Self.waitForPeer(lab, .a, "hostb", timeout: .seconds(10))
            print("DaemonLabTests: parleyd peers after \(Self.seconds(since: start)) s: B sees \(onB), A sees \(onA)")
            // Both dialled: the duplicate is closed, one connection remains. Wait for that state: one established
            // TCP connection in each host.
            let settled = await lab.settlesOnOneConnection()
            #expect(settled, "the duplicate connection was not closed")
            #expect(try await Self.peerNames(lab, .b) == ["hosta"])
            #expect(try await Self.peerNames(lab, .a) == ["hostb"])
            let status = try await Self.parleyctl(lab, .b, ["status", "--json", "--socket", Self.socket])
            #expect(status.status == 0, "\(status)")
            #expect(!status.stdout.contains(#""discovery":"off""#), "\(status.stdout)")
            #expect(a.isRunning && b.isRunning, "a: \(a.stderr)\nb: \(b.stderr)")
        }
    }

    @Test("parleyctl send --reply through parleyd on B reaches listr-example on A, found by discovery")
    func sendThroughDaemonToDiscoveredListr() async throws {
        try await NetnsLab.with { lab in
            let listr = try await Self.listr(lab, .a)
            _ = try await Self.parleyd(lab, .b)
            let sent = try await Self.parleyctl(
                lab, .b, ["send", "AddItemCommand", #"{"title":"milk"}"#, "--reply", "--wait-peer", "15", "--socket", Self.socket])
            print("DaemonLabTests: send through parleyd: \(sent)")
            #expect(sent.status == 0, "\(sent)")
            #expect(sent.stdout == "added \"milk\" (1 item on the list)\n", "\(sent)")
            let listed = try await Self.parleyctl(
                lab, .b, ["send", "ListItemsCommand", "--reply", "--to", "listr", "--socket", Self.socket])
            #expect(listed.status == 0 && listed.stdout == "[ ] milk\n", "\(listed)")
            #expect(try await Self.peerNames(lab, .b) == ["listr"])
            #expect(listr.isRunning, "\(listr.stderr)")
        }
    }

    @Test("parleyctl peers lists a peer parleyd knows from discovery but is not connected to, as not connected")
    func knownButNotConnected() async throws {
        try await NetnsLab.with { lab in
            _ = try await Self.listr(lab, .a)
            let daemon = try await Self.parleyd(lab, .b, ["--auto-connect", "none"])
            // parleyd logs each service it discovers, with its decision not to dial it; by then it knows the peer.
            try await daemon.waitForLog("discovered peer service", timeout: .seconds(15))
            #expect(daemon.stderr.contains(#"connect="no"#), "\(daemon.stderr)")
            let known = try await Self.peerNames(lab, .b, connected: false)
            #expect(known.contains("listr"), "\(known)")
            #expect(try await Self.peerNames(lab, .b, connected: true).isEmpty)
        }
    }

    @Test("parleyctl send --direct --reply on B, with no parleyd on B, reaches listr-example on A by discovery")
    func sendDirectByDiscovery() async throws {
        try await NetnsLab.with { lab in
            _ = try await Self.listr(lab, .a)
            let daemons = try await Self.run(lab, .b, ["pgrep", "-x", "parleyd"])
            #expect(daemons.status == 1, "a parleyd runs on B: \(daemons)")
            let sent = try await Self.parleyctl(
                lab, .b, ["send", "AddItemCommand", #"{"title":"milk"}"#, "--direct", "--reply", "--wait-peer", "15"])
            print("DaemonLabTests: send --direct: \(sent)")
            #expect(sent.status == 0, "\(sent)")
            #expect(sent.stdout == "added \"milk\" (1 item on the list)\n", "\(sent)")
        }
    }

    @Test("parleyctl send --direct picks, among the peers it discovers, the one that accepts the type: listr-example, not a parleyd beside it")
    func sendDirectPicksTheAcceptingPeer() async throws {
        try await NetnsLab.with { lab in
            // parleyd first, so that it is found (and connected) as early as listr-example, or earlier.
            _ = try await Self.parleyd(lab, .a)
            _ = try await Self.listr(lab, .a)
            for attempt in 1...3 {
                let sent = try await Self.parleyctl(
                    lab, .b, ["send", "ListItemsCommand", "--direct", "--reply", "--json", "--wait-peer", "15"])
                #expect(sent.status == 0, "attempt \(attempt): \(sent)")
                let line = try? JSONSerialization.jsonObject(with: Data(sent.stdout.utf8)) as? [String: Any]
                let from = (line?["from"] as? [String: Any])?["name"] as? String
                #expect(from != "hosta" && from != nil, "attempt \(attempt) answered by \(from ?? "nobody"): \(sent)")
            }
        }
    }

    @Test("parleyctl listen through parleyd on B sees a message a LAN peer on A sends (found by discovery)")
    func listenThroughDaemon() async throws {
        try await NetnsLab.with { lab in
            _ = try await Self.parleyd(lab, .b)
            let listener = try LabProcess(
                lab, .b, [try Self.binary("parleyctl"), "listen", "--json", "--type", "test.Note", "--socket", Self.socket])
            try await listener.waitForLog("listening for test.Note through parleyd")
            let sent = try await Self.parleyctl(
                lab, .a,
                ["send", "test.Note", #"{"text": "hi", "n": 1}"#, "--direct", "--name", "lanpeer", "--to", "hostb", "--wait-peer", "15"])
            print("DaemonLabTests: LAN send from A: \(sent)")
            #expect(sent.status == 0, "\(sent)")
            let line = try await listener.waitFor("the note on listen's stdout", timeout: .seconds(10)) { out, _ in
                out.split(separator: "\n").first.map(String.init)
            }
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            #expect(object?["type"] as? String == "test.Note", "\(line)")
            #expect(line.contains(#""payload":{"text": "hi", "n": 1}"#), "\(line)")
            let from = object?["from"] as? [String: Any]
            #expect(from?["name"] as? String == "lanpeer" || from?["name"] as? String == "?", "\(line)")
            try await lab.exec(.b, ["kill", "-INT", try await listener.hostPID()])
            #expect(try await listener.waitForExit(timeout: .seconds(5)) == 0, "\(listener.stderr)")
        }
    }

    @Test("parleyctl otel-env on B finds parleyd on A by the otlp key of its TXT record, set once the receiver bound port 0, and what it prints gets an export on B answered 200; a receiver on loopback is not advertised")
    func otelEnvByDiscovery() async throws {
        try await NetnsLab.with { lab in
            let nowhere = "\(Self.directory)/no-parleyd.sock"
            let loopback = try await Self.parleyd(lab, .a)
            let unadvertised = try await Self.parleyctl(lab, .b, ["otel-env", "hosta", "--timeout", "6", "--socket", nowhere])
            #expect(unadvertised.status == 1, "\(unadvertised)")
            #expect(unadvertised.stderr.contains("hosta (") && unadvertised.stderr.contains("advertises no OTLP receiver"), "\(unadvertised)")
            try await lab.exec(.a, ["kill", "-TERM", try await loopback.hostPID()])
            #expect(try await loopback.waitForExit(timeout: .seconds(5)) == 0)

            let tokenFile = "\(Self.directory)/web-token"
            let generated = try await Self.parleyctl(lab, .a, ["secret", "generate", "--output", tokenFile])
            #expect(generated.status == 0, "\(generated)")
            let token = try await lab.exec(.a, ["cat", tokenFile]).trimmingCharacters(in: .whitespacesAndNewlines)
            // The copy an operator carries to the other host, owner-only as parleyctl requires.
            try await lab.exec(.b, ["sh", "-c", "mkdir -p \(Self.directory) && umask 077 && echo \(token) > \(tokenFile)"])
            let open = try await Self.parleyd(lab, .a, ["--name", "kitchen", "--otlp-listen", "0.0.0.0:0", "--web-token-file", tokenFile])
            let ready = try await open.waitUntilParleydReady()
            let port = try #require(ready.otlp.flatMap { $0.split(separator: ":").last }.flatMap { Int($0) })
            let expected = "export OTEL_EXPORTER_OTLP_ENDPOINT=http://\(try await lab.ipv4(.a)):\(port)\n"
                + "export OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer%20\(token)\n"

            let named = try await Self.parleyctl(lab, .b, ["otel-env", "kitchen", "--token-file", tokenFile, "--timeout", "10", "--socket", nowhere])
            #expect(named.status == 0 && named.stdout == expected, "\(named)")
            let withoutToken = try await Self.parleyctl(lab, .b, ["otel-env", "kitchen", "--timeout", "10", "--socket", nowhere])
            #expect(withoutToken.status == 1 && withoutToken.stdout.isEmpty && withoutToken.stderr.contains("--token-file"), "\(withoutToken)")

            // The only parleyd advertising one: no name needed. Then what an SDK does with the two variables.
            let script = #"""
                eval "$("$0" otel-env --token-file "$1" --timeout 10 --socket "$2")" || exit 9
                header=$(printf %s "$OTEL_EXPORTER_OTLP_HEADERS" | sed 's/=/: /; s/%20/ /')
                body='{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"from-b"}}]},"scopeSpans":[{"spans":[{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174","name":"lab","startTimeUnixNano":"1","endTimeUnixNano":"2"}]}]}]}'
                curl -s -o /dev/null -w '%{http_code}' -H "$header" -H 'Content-Type: application/json' --data-binary "$body" "$OTEL_EXPORTER_OTLP_ENDPOINT/v1/traces"
                """#
            let exported = try await Self.run(lab, .b, ["sh", "-c", script, try Self.binary("parleyctl"), tokenFile, nowhere])
            #expect(exported.status == 0 && exported.stdout == "200", "\(exported)")
            let sessions = try await Self.parleyctl(lab, .a, ["sessions", "--json", "--socket", Self.socket])
            #expect(sessions.stdout.contains(#""appName":"from-b""#), "\(sessions)")
        }
    }

    @Test("send with no peer anywhere exits 3 after --wait-peer, with --direct and through a lone parleyd")
    func noPeerExits3() async throws {
        try await NetnsLab.with { lab in
            let direct = try await Self.parleyctl(lab, .b, ["send", "X", "--direct", "--wait-peer", "2"], timeout: .seconds(15))
            print("DaemonLabTests: send --direct, nobody: \(direct)")
            #expect(direct.status == 3, "\(direct)")
            #expect(direct.seconds >= 2 && direct.seconds < 6, "\(direct)")
            #expect(direct.stderr.contains("parleyctl:"), "\(direct)")

            _ = try await Self.parleyd(lab, .b)
            let daemon = try await Self.parleyctl(lab, .b, ["send", "X", "--wait-peer", "2", "--socket", Self.socket], timeout: .seconds(15))
            print("DaemonLabTests: send through a lone parleyd: \(daemon)")
            #expect(daemon.status == 3, "\(daemon)")
            #expect(daemon.seconds >= 2 && daemon.seconds < 6, "\(daemon)")
        }
    }

    @Test("SIGTERM to parleyd on A: exit 0 within 2 s, and its service leaves avahi-browse on B")
    func sigtermWithdraws() async throws {
        try await NetnsLab.with { lab in
            // Avahi's own browser on B, left running: each line it prints is an event.
            let browser = try LabProcess(lab, .b, ["avahi-browse", "-r", "-p", "_debug._tcp"])
            let a = try await Self.parleyd(lab, .a)
            try await browser.waitFor("B resolves hosta", timeout: .seconds(10)) { out, _ in
                Self.browseLines(out, "=", "hosta").isEmpty ? nil : true
            }

            let pid = try await a.hostPID()
            let killedAt = ContinuousClock.now
            try await lab.exec(.a, ["kill", "-TERM", pid])
            let status = try await a.waitForExit(timeout: .seconds(5))
            let stopSeconds = Self.seconds(since: killedAt)
            print("DaemonLabTests: parleyd exited \(status.map(String.init) ?? "not") \(stopSeconds) s after SIGTERM")
            #expect(status == 0, "\(a.stderr)")
            #expect(stopSeconds < 2, "parleyd took \(stopSeconds) s to stop")

            try await browser.waitFor("hosta leaves B", timeout: .seconds(10)) { out, _ in
                Self.browseLines(out, "-", "hosta").isEmpty ? nil : true
            }
            print("DaemonLabTests: hosta left avahi-browse on B \(Self.seconds(since: killedAt)) s after SIGTERM")
            try await lab.exec(.b, ["kill", try await browser.hostPID()])
        }
    }

    @Test("debugger apps find parleyd by discovery: an original-debugger app (python-zeroconf, 206 frames) and the Swift client record states, and replays reach each")
    func debuggerAppsFindParleyd() async throws {
        try await NetnsLab.with { lab in
            _ = try await Self.parleyd(lab, .a)
            let python = try Interop.python()
            let script = NetnsLab.repositoryRoot.appendingPathComponent("scripts/interop/original_debugger_app.py").path
            let state = #"{"count":1.10,"名前":"ü"}"#
            let original = try LabProcess(
                lab, .b,
                [python, script, "--browse", "--send", "load", Data(state.utf8).base64EncodedString(), Data([0x89, 0x50]).base64EncodedString(),
                 "--expect", "1", "--timeout", "60"]
            )
            let swiftApp = try LabProcess(lab, .b, [try Self.binary("parley-test-peer"), "debugger-app", "swift-app", "2"])

            // Both apps found parleyd on their own and recorded: 1 + 2 entries.
            // `history --follow --limit 3` ends as soon as parleyd has recorded the third.
            let history = try await Self.parleyctl(
                lab, .a, ["history", "--json", "--follow", "--limit", "3", "--socket", Self.socket], timeout: .seconds(40))
            #expect(history.status == 0, "\(history)")
            let entries = history.stdout.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            let actions = Set(entries.compactMap { $0["action"] as? String })
            #expect(actions == ["load", "step.0", "step.1"], "original: \(original.stdout) \(original.stderr)\nswift: \(swiftApp.stdout) \(swiftApp.stderr)")

            for action in ["load", "step.0"] {
                let sequence = try #require(entries.first { $0["action"] as? String == action }?["sequence"] as? Int)
                let replay = try await Self.parleyctl(lab, .a, ["replay", String(sequence), "--socket", Self.socket])
                #expect(replay.status == 0, "\(replay)")
            }
            try await original.waitFor("the original app to receive the state", timeout: .seconds(15)) { out, _ in
                out.contains(#""event": "received""#) ? true : nil
            }
            let received = original.stdout.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
                .first { $0["event"] as? String == "received" }?["state"] as? String
            #expect(received.flatMap { Data(base64Encoded: $0) } == Data(state.utf8))
            try await swiftApp.waitFor("the Swift app to apply step 0", timeout: .seconds(15)) { out, _ in
                out.contains(#""event":"restored","step":0"#) ? true : nil
            }
        }
    }

    @Test("an app paired with parleyd on A sends its states there and never to parleyd on B: both were asked to pair and showed the app's code, a person accepted on A, then on B too, and the app's next run still sends only to A")
    func pairedAppSendsOnlyToItsDebugger() async throws {
        try await NetnsLab.with { lab in
            let a = try await Self.parleyd(lab, .a)
            let b = try await Self.parleyd(lab, .b)
            let app = [try Self.binary("parley-test-peer"), "debugger-app", "paired-app", "2", "--paired", "\(Self.directory)/paired-app"]
            let first = try LabProcess(lab, .b, app)

            // Paired with none yet, the app asks every debugger it finds, and records nothing anywhere.
            try await a.waitForLog("a device asks to pair", timeout: .seconds(30))
            try await b.waitForLog("a device asks to pair", timeout: .seconds(30))
            let listed = try await Self.parleyctl(lab, .a, ["pair", "--json", "--socket", Self.socket])
            #expect(listed.status == 0, "\(listed)")
            let list = try #require(try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [String: Any])
            let request = try #require((list["pending"] as? [[String: Any]])?.first { $0["name"] as? String == "paired-app" }, "\(listed.stdout)")
            let fingerprint = try #require(request["fingerprint"] as? String)
            let code = try #require(request["code"] as? String)
            // The person compares: the app's log shows the code parleyd on A shows.
            try await first.waitFor("the code \(code) in the app's log", timeout: .seconds(15)) { out, err in (out + err).contains(code) ? true : nil }

            let accepted = try await Self.parleyctl(lab, .a, ["pair", "accept", String(fingerprint.prefix(19)), "--socket", Self.socket])
            #expect(accepted.status == 0, "\(accepted)")
            let history = try await Self.parleyctl(
                lab, .a, ["history", "--json", "--follow", "--limit", "2", "--socket", Self.socket], timeout: .seconds(40))
            #expect(history.status == 0, "\(history)")
            #expect(history.stdout.split(separator: "\n").count == 2, "\(history.stdout)")

            // A person on B accepts as well; the app has pinned A, and B gets nothing, now or in the app's next run.
            let acceptedOnB = try await Self.parleyctl(lab, .b, ["pair", "accept", String(fingerprint.prefix(19)), "--socket", Self.socket])
            #expect(acceptedOnB.status == 0, "\(acceptedOnB)")
            try await lab.exec(.b, ["kill", try await first.hostPID()])
            _ = try await first.waitForExit(timeout: .seconds(10))
            let second = try LabProcess(lab, .b, app)
            let both = try await Self.parleyctl(
                lab, .a, ["history", "--json", "--follow", "--limit", "4", "--socket", Self.socket], timeout: .seconds(40))
            #expect(both.stdout.split(separator: "\n").count == 4, "\(both.stdout)\napp: \(second.stdout) \(second.stderr)")
            let sessionsOnB = try await Self.parleyctl(lab, .b, ["sessions", "--json", "--socket", Self.socket])
            let sessionLines = sessionsOnB.stdout.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            #expect(sessionsOnB.status == 0 && sessionLines.isEmpty, "\(sessionsOnB)")
            #expect(!b.stderr.contains("step.0"), "\(b.stderr)")
            try await lab.exec(.b, ["kill", try await second.hostPID()])
        }
    }
}
