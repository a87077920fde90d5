import Foundation
import NIOCore
import Parley
import ParleyDebugger
import ParleyTelemetry
import ParleyTestSupport
import Testing

/// `parleyctl logs`, `traces`, `trace` and `export --har` against a real parleyd, with apps sending
/// `parley.telemetry.Batch` over TCP on loopback.
@Suite("parleyctl: logs and traces", .serialized, .timeLimit(.minutes(3)))
struct TelemetryCommandTests {
    /// An app connected to parleyd, and a local client told of every log record parleyd stores (to wait for them).
    struct Setup {
        let daemon: ParleydProcess
        let apps: [String: (transceiver: Transceiver, parleyd: Peer)]
        let watcher: Transceiver
        let stored: Inbox<StoredLogRecord>

        static func start(apps names: [String]) async throws -> Setup {
            let daemon = try await ParleydProcess.start(staticPeer: nil)
            let (watcher, parleyd) = try await daemon.localClient()
            let stored = Inbox<StoredLogRecord>()
            watcher.receive(TelemetryControl.LogAppended.self) { message, _ in stored.put(message.record) }
            _ = try await watcher.request(TelemetryControl.FollowLogs(query: LogQuery()), from: parleyd, expecting: TelemetryControl.FollowingLogs.self)
            var apps: [String: (Transceiver, Peer)] = [:]
            for name in names {
                let app = Transceiver(configuration: TransceiverConfiguration(name: name, identity: .ephemeral, listenHost: nil))
                try await app.start()
                apps[name] = (app, try await app.connect(to: daemon.endpoint))
            }
            return Setup(daemon: daemon, apps: apps, watcher: watcher, stored: stored)
        }

        /// Sends `batch` from `app`, then a marker record, and returns once parleyd has stored the marker (and so
        /// the batch: an app's messages are handled in order).
        func send(_ batch: TelemetryBatch, from app: String) async throws {
            let (transceiver, parleyd) = apps[app]!
            let marker = "stored \(UUID().uuidString)"
            for batch in [batch, TelemetryBatch(logs: [LogRecord(time: .now, severity: .trace, label: "marker", message: marker)])] {
                try await transceiver.sendRaw(typeName: TelemetryBatch.messageType, payload: ByteBuffer(bytes: try JSONEncoder().encode(batch)), to: parleyd.id)
            }
            while try await stored.next().record.message != marker {}
        }

        /// The app's session id.
        func session(of app: String) async throws -> Int {
            let sessions = try await daemon.ctl(["sessions", "--json"]).stdout.split(separator: "\n")
                .compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            return try #require(sessions.first { $0["appName"] as? String == app }?["id"] as? Int)
        }

        func stop() async throws {
            for (transceiver, _) in apps.values { await transceiver.stop() }
            await watcher.stop()
            #expect(try await daemon.stop() == 0)
        }
    }

    static func lines(_ output: String) -> [String] { output.split(separator: "\n").map(String.init) }

    /// Lines without the test's markers.
    static func records(_ output: String) -> [String] { lines(output).filter { !$0.contains("marker") } }

    static let time = #"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3}"#

    @Test("logs prints a line per record, oldest first: time, level, app, label, message, metadata; APP and the filters choose; --json is exact")
    func logsAndFilters() async throws {
        let setup = try await Setup.start(apps: ["listr", "other"])
        let daemon = setup.daemon
        let twoHoursAgo = UnixNanos(UnixNanos.now.value - 7_200_000_000_000)
        try await setup.send(TelemetryBatch(logs: [
            LogRecord(time: twoHoursAgo, severity: .debug, label: "listr.store", message: "loading items", metadata: ["count": .int(3)]),
            LogRecord(time: .now, severity: .info, label: "listr.net", message: "GET /items took 12 ms", metadata: ["path": .string("/a b"), "ok": .bool(true)]),
            LogRecord(time: .now, severity: .warning, label: "listr.store", message: "disk almost full"),
            LogRecord(time: .now, severity: .error, label: "listr.ui", message: "render failed: Timeout"),
        ]), from: "listr")
        try await setup.send(TelemetryBatch(logs: [LogRecord(time: .now, severity: .notice, label: "", message: "other app line")]), from: "other")

        let all = try await daemon.ctl(["logs", "--level", "debug"])
        #expect(all.status == 0, "\(all)")
        let lines = Self.records(all.stdout)
        #expect(lines.count == 5, "\(lines)")
        #expect(lines[0].range(of: "^\(Self.time) debug    listr listr.store: loading items count=3$", options: .regularExpression) != nil, "\(lines[0])")
        #expect(lines[1].hasSuffix(#" info     listr listr.net: GET /items took 12 ms ok=true path="/a b""#), "\(lines[1])")
        #expect(lines[4].hasSuffix(" notice   other: other app line"), "\(lines[4])")
        #expect(!all.stdout.contains("\u{1B}["), "no colour in a pipe")

        func messages(_ arguments: [String]) async throws -> [String] {
            let result = try await daemon.ctl(["logs"] + arguments)
            #expect(result.status == 0, "\(result)")
            return Self.records(result.stdout).map { line in String(line.split(separator: ": ", maxSplits: 1).last ?? "") }
        }
        // APP: the app's records, without its name on each line.
        let listr = try await daemon.ctl(["logs", "listr"])
        #expect(Self.records(listr.stdout).count == 4 && Self.records(listr.stdout)[2].hasSuffix(" warning  listr.store: disk almost full"), "\(listr)")
        #expect(try await messages(["listr", "--level", "warning"]) == ["disk almost full", "render failed: Timeout"])
        #expect(try await messages(["listr", "--level", "WARN"]) == ["disk almost full", "render failed: Timeout"])
        #expect(try await messages(["--label", "listr.st*"]) == ["loading items count=3", "disk almost full"])
        #expect(try await messages(["--grep", "timeout"]) == ["render failed: Timeout"])
        #expect(try await messages(["--grep", "items took"]) == [#"GET /items took 12 ms ok=true path="/a b""#])
        #expect(try await messages(["listr", "--since", "1h"]) == [#"GET /items took 12 ms ok=true path="/a b""#, "disk almost full", "render failed: Timeout"])
        #expect(try await messages(["listr", "-n", "2", "--level", "info"]) == ["disk almost full", "render failed: Timeout"])

        let json = try await daemon.ctl(["logs", "listr", "--json", "--level", "debug"])
        let objects = Self.lines(json.stdout).compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        let records = objects.compactMap { $0["record"] as? [String: Any] }.filter { $0["label"] as? String != "marker" }
        #expect(records.count == 4 && records[0]["message"] as? String == "loading items" && records[0]["severity"] as? String == "debug", "\(json.stdout)")
        #expect(records[0]["timeUnixNano"] as? UInt64 == twoHoursAgo.value)
        #expect((records[1]["metadata"] as? [String: Any])?["path"] as? String == "/a b")
        #expect(objects.allSatisfy { $0["id"] is Int && $0["session"] is Int })

        let unknown = try await daemon.ctl(["logs", "nobody"])
        #expect(unknown.status == 1 && unknown.stderr.contains("no session of an app named nobody"), "\(unknown)")
        let badLevel = try await daemon.ctl(["logs", "--level", "loud"])
        #expect(badLevel.status == 2 && badLevel.stderr.contains("--level"), "\(badLevel)")
        try await setup.stop()
    }

    @Test("logs --follow prints the last records, then each record stored after it started, once; SIGTERM ends it with status 0")
    func follow() async throws {
        let setup = try await Setup.start(apps: ["listr"])
        try await setup.send(TelemetryBatch(logs: (1...3).map { LogRecord(time: .now, severity: .info, label: "n", message: "before \($0)") }), from: "listr")
        let follower = try ChildProcess("parleyctl", ["logs", "listr", "-f", "-n", "2", "--label", "n", "--socket", setup.daemon.controlSocket])
        _ = try await follower.waitFor(in: \.stdout) { $0.contains("before 3") ? true : nil }
        try await setup.send(TelemetryBatch(logs: [LogRecord(time: .now, severity: .warning, label: "n", message: "after start")]), from: "listr")
        let output = try await follower.waitFor(in: \.stdout) { $0.contains("after start") ? $0 : nil }
        #expect(Self.records(output).map { String($0.split(separator: ": ").last!) } == ["before 2", "before 3", "after start"], "\(output)")
        #expect(try await follower.stop(SIGTERM, within: .seconds(10)) == 0)
        try await setup.stop()
    }

    @Test("what an app wrote reaches the terminal escaped: no escape sequence, no forged line; colours only on a terminal, by level, not with NO_COLOR")
    func escaping() async throws {
        let setup = try await Setup.start(apps: ["evil\u{1B}[2J"])
        let hostile = LogRecord(
            time: .now, severity: .warning, label: "lab\u{1B}]0;title\u{07}el", message: "clip \u{1B}]52;c;ZXZpbA==\u{07} \u{1B}[31mred\nforged line\u{202E}",
            metadata: ["k\u{1B}[1m": .string("v\r\nx"), "plain": .string("a\u{9B}b")])
        try await setup.send(TelemetryBatch(logs: [hostile]), from: "evil\u{1B}[2J")
        let piped = try await setup.daemon.ctl(["logs", "--level", "info"])
        #expect(piped.status == 0, "\(piped)")
        let lines = Self.records(piped.stdout)
        #expect(lines.count == 1, "one record, one line: \(piped.stdout.debugDescription)")
        #expect(!piped.stdout.contains("\u{1B}") && !piped.stdout.contains("\u{9B}") && !piped.stdout.contains("\u{202E}") && !piped.stdout.contains("\r"))
        #expect(lines.first?.contains(#"evil\x1b[2J lab\x1b]0;title\x07el: clip \x1b]52;c;ZXZpbA==\x07 \x1b[31mred\nforged line\u202e"#) == true, "\(lines)")
        #expect(lines.first?.hasSuffix(#" k\x1b[1m=v\r\nx plain=a\x9bb"#) == true, "\(lines)")

        // On a terminal the line is yellow (a warning), and the app's own sequences are still escaped.
        let parleyctl = PeerProcess.productsDirectory.appendingPathComponent("parleyctl").path
        func onTerminal(noColor: Bool) async throws -> String {
            let environment = "env -u NO_COLOR TERM=xterm-256color PAGER=cat" + (noColor ? " NO_COLOR=1" : "")
            let child = try ChildProcess(
                "/usr/bin/script", ["-qec", "\(environment) \(parleyctl) logs --level warning --socket \(setup.daemon.controlSocket)", "/dev/null"])
            _ = try await child.exitStatus(within: .seconds(20))
            return child.stdout
        }
        let coloured = try await onTerminal(noColor: false)
        #expect(coloured.contains("\u{1B}[33m") && coloured.contains(#"\x1b]52"#), "\(coloured.debugDescription)")
        #expect(!coloured.contains("\u{1B}]52") && !coloured.contains("\u{1B}[2J") && !coloured.contains("\u{1B}[31m"), "\(coloured.debugDescription)")
        #expect(try await !onTerminal(noColor: true).contains("\u{1B}["))
        try await setup.stop()
    }

    @Test("traces lists recent traces; trace prints one as a waterfall indented by parent, bars scaled to the trace, status, and -v the attributes")
    func tracesAndWaterfall() async throws {
        let setup = try await Setup.start(apps: ["client", "server"])
        let trace = TraceID(hex: "4bf92f3577b34da6a3ce929d0e0e4736")!
        let (root, call, query) = (SpanID.random(), SpanID.random(), SpanID.random())
        let start = UnixNanos.now.value - 10_000_000_000
        func at(_ milliseconds: UInt64) -> UnixNanos { UnixNanos(start + milliseconds * 1_000_000) }
        try await setup.send(TelemetryBatch(spans: [
            SpanRecord(traceID: trace, spanID: root, name: "GET /items", kind: .client, start: at(0), end: at(100), status: .init(code: .ok),
                attributes: ["http.request.method": .string("GET"), "url.full": .string("http://127.0.0.1:8080/items")]),
        ]), from: "client")
        try await setup.send(TelemetryBatch(spans: [
            SpanRecord(traceID: trace, spanID: call, parentSpanID: root, name: "GET /items (route)", kind: .server, start: at(20), end: at(80),
                status: .init(code: .error, message: "boom"), events: [.init(name: "retry", time: at(50), attributes: ["attempt": .int(2)])]),
            SpanRecord(traceID: trace, spanID: query, parentSpanID: call, name: "SELECT items", start: at(30), end: at(60)),
            SpanRecord(traceID: TraceID(hex: "aaaaaaaa000000000000000000000001")!, spanID: .random(), name: "older", start: UnixNanos(start - 1_000_000_000),
                end: UnixNanos(start - 999_000_000)),
        ]), from: "server")

        let list = try await setup.daemon.ctl(["traces"])
        #expect(list.status == 0, "\(list)")
        let rows = Self.lines(list.stdout)
        #expect(rows.first?.hasPrefix("TRACE") == true && rows.count == 3, "\(list.stdout)")
        #expect(rows[1].hasPrefix("4bf92f3577b3") && rows[1].contains("100.0 ms") && rows[1].hasSuffix("3      1       GET /items"), "\(rows[1])")
        #expect(Self.lines(try await setup.daemon.ctl(["traces", "client"]).stdout).count == 2, "the client's trace only")
        let json = try await setup.daemon.ctl(["traces", "--json", "-n", "1"])
        #expect(Self.lines(json.stdout).count == 1 && json.stdout.contains(#""spanCount":3"#), "\(json)")

        let waterfall = try await setup.daemon.ctl(["trace", "4bf92f35"])
        #expect(waterfall.status == 0, "\(waterfall)")
        let lines = Self.lines(waterfall.stdout)
        #expect(lines.count == 4, "\(waterfall.stdout)")
        #expect(lines[0].hasPrefix("trace 4bf92f3577b34da6a3ce929d0e0e4736  3 spans  100.0 ms  1 error"), "\(lines[0])")
        #expect(lines[1].hasPrefix("GET /items     ") && lines[1].contains(" client  ") && lines[1].contains("|" + String(repeating: "=", count: 40) + "|")
            && lines[1].hasSuffix(" ok"), "\(lines[1])")
        // 20 ms into a 100 ms trace, 60 ms long: 8 columns in, 24 wide.
        #expect(lines[2].hasPrefix("  GET /items (route)") && lines[2].contains("|" + String(repeating: " ", count: 8) + String(repeating: "=", count: 24) + String(repeating: " ", count: 8) + "|")
            && lines[2].hasSuffix("error: boom"), "\(lines[2])")
        #expect(lines[3].hasPrefix("    SELECT items") && lines[3].contains(" internal ") && lines[3].contains("30.0 ms"), "\(lines[3])")
        let verbose = Self.lines(try await setup.daemon.ctl(["trace", "4bf92f3577b34da6a3ce929d0e0e4736", "-v"]).stdout)
        #expect(verbose.contains("    http.request.method = GET"), "\(verbose)")
        #expect(verbose.contains("      event retry at +30.0 ms attempt=2"), "\(verbose)")

        let missing = try await setup.daemon.ctl(["trace", "00000000"])
        #expect(missing.status == 1 && missing.stderr.contains("no stored span belongs to a trace whose id starts with 00000000"), "\(missing)")
        let invalid = try await setup.daemon.ctl(["trace", "xyz"])
        #expect(invalid.status == 2 && invalid.stderr.contains("not a trace id"), "\(invalid)")
        try await setup.send(TelemetryBatch(spans: [SpanRecord(traceID: TraceID(hex: "4bf92f35000000000000000000000000")!, spanID: .random(), name: "twin", start: at(0), end: at(1))]), from: "client")
        let ambiguous = try await setup.daemon.ctl(["trace", "4bf92f35"])
        #expect(ambiguous.status == 1 && ambiguous.stderr.contains("several traces"), "\(ambiguous)")
        try await setup.stop()
    }

    @Test("export --har writes the session's HTTP client spans as a HAR 1.2 file with every required field, from current and older attribute names")
    func har() async throws {
        let setup = try await Setup.start(apps: ["listr"])
        let trace = TraceID.random()
        let start = UnixNanos.now.value - 5_000_000_000
        try await setup.send(TelemetryBatch(spans: [
            SpanRecord(traceID: trace, spanID: .random(), name: "GET", kind: .client, start: UnixNanos(start + 1_000_000), end: UnixNanos(start + 13_500_000),
                attributes: [
                    "http.request.method": .string("GET"), "url.full": .string("http://127.0.0.1:8080/items?filter=open&page=2"),
                    "http.response.status_code": .int(200), "network.protocol.version": .string("1.1"),
                    "http.request.header.accept": .array([.string("application/json")]),
                    "http.response.header.content-type": .array([.string("application/json")]), "http.response.body.size": .int(512),
                ]),
            SpanRecord(traceID: trace, spanID: .random(), name: "POST", kind: .client, start: UnixNanos(start), end: UnixNanos(start + 2_000_000),
                attributes: ["http.method": .string("POST"), "http.url": .string("https://api.example/v1/items"), "http.status_code": .int(201),
                    "http.request_content_length": .int(42)]),
            SpanRecord(traceID: trace, spanID: .random(), name: "GET", kind: .client, start: UnixNanos(start + 20_000_000), end: UnixNanos(start + 21_000_000),
                status: .init(code: .error, message: "connection refused"),
                attributes: ["http.request.method": .string("GET"), "url.full": .string("http://127.0.0.1:1/")]),
            SpanRecord(traceID: trace, spanID: .random(), name: "cache lookup", kind: .client, start: UnixNanos(start), end: UnixNanos(start + 1)),
            SpanRecord(traceID: trace, spanID: .random(), name: "GET /served", kind: .server, start: UnixNanos(start), end: UnixNanos(start + 1),
                attributes: ["http.request.method": .string("GET"), "url.path": .string("/served")]),
        ]), from: "listr")
        let session = try await setup.session(of: "listr")
        let file = setup.daemon.directory.file("session.har")
        let written = try await setup.daemon.ctl(["export", "--har", String(session), "-o", file])
        #expect(written.status == 0, "\(written)")
        #expect(written.stderr.contains("3 HTTP requests written to \(file); 1 client span without an HTTP method and URL left out"), "\(written.stderr)")
        let archive = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: file))) as? [String: Any])
        let entries = try Self.validateHAR(archive)
        #expect(entries.count == 3)
        let requests = entries.compactMap { $0["request"] as? [String: Any] }
        let responses = entries.compactMap { $0["response"] as? [String: Any] }
        #expect(requests.map { $0["method"] as? String } == ["POST", "GET", "GET"], "by start time")
        #expect(requests.map { $0["url"] as? String } == ["https://api.example/v1/items", "http://127.0.0.1:8080/items?filter=open&page=2", "http://127.0.0.1:1/"])
        #expect(responses.map { $0["status"] as? Int } == [201, 200, 0])
        #expect(responses.map { $0["statusText"] as? String } == ["Created", "OK", ""])
        #expect(requests[0]["bodySize"] as? Int == 42)
        #expect((requests[1]["queryString"] as? [[String: String]]) == [["name": "filter", "value": "open"], ["name": "page", "value": "2"]])
        #expect((requests[1]["headers"] as? [[String: String]]) == [["name": "accept", "value": "application/json"]])
        #expect(((responses[1]["content"] as? [String: Any])?["mimeType"] as? String) == "application/json")
        #expect(((responses[1]["content"] as? [String: Any])?["size"] as? Int) == 512)
        #expect(Self.number(entries[1]["time"]) == 12.5)
        #expect(entries[2]["comment"] as? String == "connection refused")

        let again = try await setup.daemon.ctl(["export", "--har", String(session), "-o", file])
        #expect(again.status == 1 && again.stderr.contains("exists; give --force"), "\(again)")
        let toStandardOutput = try await setup.daemon.ctl(["export", "--har", String(session)])
        #expect(toStandardOutput.status == 0)
        let piped = try #require(try JSONSerialization.jsonObject(with: Data(toStandardOutput.stdout.utf8)) as? [String: Any])
        #expect(try Self.validateHAR(piped).count == 3)
        let noFile = try await setup.daemon.ctl(["export", String(session)])
        #expect(noFile.status == 2 && noFile.stderr.contains("give the FILE"), "\(noFile)")

        // The history export carries the spans (and the markers' log records) too.
        let history = setup.daemon.directory.file("session.jsonl")
        let exported = try await setup.daemon.ctl(["export", String(session), history])
        #expect(exported.status == 0 && exported.stderr.contains("0 entries, 1 log record and 5 spans written"), "\(exported)")
        try await setup.stop()
    }

    /// A JSON number as JSONSerialization hands it back (an integer one may come as an Int).
    static func number(_ value: Any?) -> Double? {
        switch value {
        case let value as Int: Double(value)
        case let value as Double: value
        case let value as NSNumber: value.doubleValue
        default: nil
        }
    }

    /// Checks a HAR's required fields (HAR 1.2, W3C Web Performance draft: log, creator, entries, request,
    /// response, content, cache, timings and their members and types); returns its entries.
    static func validateHAR(_ archive: [String: Any]) throws -> [[String: Any]] {
        let log = try #require(archive["log"] as? [String: Any])
        #expect(log["version"] as? String == "1.2")
        let creator = try #require(log["creator"] as? [String: Any])
        #expect(creator["name"] is String && creator["version"] is String)
        let entries = try #require(log["entries"] as? [[String: Any]])
        func nameValues(_ value: Any?) -> Bool {
            guard let list = value as? [[String: Any]] else { return false }
            return list.allSatisfy { $0["name"] is String && $0["value"] is String }
        }
        for entry in entries {
            let started = try #require(entry["startedDateTime"] as? String)
            let iso8601 = ISO8601DateFormatter()
            iso8601.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            #expect(iso8601.date(from: started) != nil, "\(started)")
            let time = try #require(number(entry["time"]))
            let request = try #require(entry["request"] as? [String: Any])
            for key in ["method", "url", "httpVersion"] { #expect(request[key] is String, "request.\(key)") }
            #expect(nameValues(request["cookies"]) && nameValues(request["headers"]) && nameValues(request["queryString"]))
            #expect(request["headersSize"] is Int && request["bodySize"] is Int)
            let response = try #require(entry["response"] as? [String: Any])
            #expect(response["status"] is Int && response["statusText"] is String && response["httpVersion"] is String)
            #expect(nameValues(response["cookies"]) && nameValues(response["headers"]))
            let content = try #require(response["content"] as? [String: Any])
            #expect(content["size"] is Int && content["mimeType"] is String)
            #expect(response["redirectURL"] is String && response["headersSize"] is Int && response["bodySize"] is Int)
            #expect(entry["cache"] is [String: Any])
            let timings = try #require(entry["timings"] as? [String: Any])
            let phases = try ["send", "wait", "receive"].map { try #require(number(timings[$0]), "timings.\($0)") }
            #expect(phases.allSatisfy { $0 >= -1 })
            #expect(abs(phases.filter { $0 >= 0 }.reduce(0, +) - time) < 0.001, "time is the sum of the timings")
        }
        return entries
    }
}
