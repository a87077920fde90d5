import Foundation
import Parley
import ParleyDebugger
import ParleyTelemetry
import ParleyTestSupport
import Testing

/// `otlpForward` between real processes: a parleyd forwarding to a second parleyd's OTLP receiver, what the first
/// stores from OTLP exporters (curl) and from a Swift app (a transceiver sending `parley.telemetry.Batch`) read back
/// from the second over its control socket; the counts from the first's `/metrics`.
@Suite("parleyd: forwarding to another OTLP receiver", .serialized, .timeLimit(.minutes(3)))
struct OTLPForwardTests {
    static let trace = TraceID(hex: "4bf92f3577b34da6a3ce929d0e0e4736")!

    static func logsExport(service: String, message: String) -> String {
        """
        {"resourceLogs":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"\(service)"}},
          {"key":"service.instance.id","value":{"stringValue":"i-1"}},{"key":"telemetry.sdk.language","value":{"stringValue":"python"}}]},
          "scopeLogs":[{"scope":{"name":"flask.app"},"logRecords":[{"timeUnixNano":"1764288000100000000","severityNumber":13,
          "body":{"stringValue":"\(message)"},"attributes":[{"key":"cart.items","value":{"intValue":"3"}}]}]}]}]}
        """
    }

    /// A token file of its own, owner-only as parleyd requires; its token.
    static func tokenFile(in directory: ScratchDirectory) throws -> (path: String, token: String) {
        let token = SharedSecret.generate().fileText.trimmingCharacters(in: .whitespacesAndNewlines)
        let path = directory.file("web-token")
        try Data((token + "\n").utf8).write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        return (path, token)
    }

    /// parleyd's `/metrics` (its web debugger, open on loopback without a token).
    static func metrics(of daemon: ParleydProcess) async throws -> String {
        let web = try #require(daemon.webURL)
        return try await ChildProcess.run("/usr/bin/curl", ["-s", web + "metrics"]).stdout
    }

    /// The value of the sample `name` (with its labels, as written: `x_total{signal="logs"}`) in Prometheus' text.
    static func sample(_ name: String, in text: String) -> Double? {
        text.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Double($0.split(separator: " ").last ?? "") }
    }

    @Test("everything the first parleyd stores, from an OTLP exporter and from a Swift app, reaches the second's history, with the headers configured; the first counts what it sent")
    func forwardsToAnotherParleyd() async throws {
        let directory = try ScratchDirectory(prefix: "otlp-forward")
        let (tokenPath, token) = try Self.tokenFile(in: directory)
        // The receiving parleyd asks every export for its token: the header below is what lets the records in.
        let second = try await ParleydProcess.start(name: "collector", environment: ["PARLEY_WEB_TOKEN_FILE": tokenPath])
        let target = try #require(second.ready.otlp)
        let first = try await ParleydProcess.start(
            name: "laptop",
            environment: ["PARLEY_OTLP_FORWARD": target, "PARLEY_OTLP_FORWARD_HEADERS": "authorization=Bearer%20\(token)"])
        let receiver = try #require(first.ready.otlp)

        // From an OTLP exporter: a span and a log record of service checkout.
        let spans = try await OTLPReceiverTests.post(receiver + "/v1/traces", OTLPReceiverTests.spans(instance: "i-1", spanID: "eee19b7ec3c1b174"))
        #expect(spans.status == "200", "\(spans)")
        let logs = try await OTLPReceiverTests.post(receiver + "/v1/logs", Self.logsExport(service: "checkout", message: "cart loaded"))
        #expect(logs.status == "200", "\(logs)")
        // From a Swift app, over its Parley connection: two log lines and a span.
        let app = try await TelemetryApp.connect("Listr", to: first)
        let appID = try #require(app.transceiver.localPeerID?.rawValue)
        let saved = LogRecord(
            time: .now, severity: .notice, label: "listr.store", message: "saved 3 items", metadata: ["count": .int(3)], source: "Listr",
            file: "Listr/Store.swift", function: "save()", line: 42, traceID: Self.trace, spanID: SpanID(hex: "00f067aa0ba902b7"))
        let span = SpanRecord(
            traceID: Self.trace, spanID: SpanID(hex: "00f067aa0ba902b7")!, name: "GET /api/items", kind: .client, start: UnixNanos(1_764_288_000_000_000_000),
            end: UnixNanos(1_764_288_000_100_000_000), status: .init(code: .error, message: "timed out"), attributes: ["http.request.method": .string("GET")])
        try await app.send(TelemetryBatch(logs: [saved, TelemetryWatcher.marker("app done")], spans: [span]))

        let watcher = try await TelemetryWatcher.start(on: second)
        let arrived = await eventually {
            let sessions = (try? await watcher.ask(DebuggerControl.Sessions(), DebuggerControl.SessionList.self).sessions) ?? []
            let counts = sessions.map { "\($0.appName) \($0.logCount) \($0.spanCount)" }.sorted()
            return counts == ["Listr 2 1", "checkout 1 1"]
        }
        let sessions = try await watcher.ask(DebuggerControl.Sessions(), DebuggerControl.SessionList.self).sessions
        #expect(arrived, "the second parleyd has \(sessions.map { "\($0.appName): \($0.logCount) logs, \($0.spanCount) spans" }); the first's log:\n\(first.log)")

        let listr = try #require(sessions.first { $0.appName == "Listr" })
        #expect(listr.kind == .otlp)
        #expect(listr.resource["service.instance.id"] == .string(appID))
        #expect(listr.resource["telemetry.sdk.name"] == .string("parley"))
        let checkout = try #require(sessions.first { $0.appName == "checkout" })
        #expect(checkout.resource["service.instance.id"] == .string("i-1"))
        #expect(checkout.resource["telemetry.sdk.language"] == .string("python"), "the exporter's own resource travels on")

        let forwarded = try await watcher.logs(LogQuery(session: listr.id)).map(\.record)
        #expect(forwarded.first { $0.message == "saved 3 items" } == saved, "\(forwarded)")
        let cart = try await watcher.logs(LogQuery(session: checkout.id)).map(\.record)
        #expect(cart.map(\.message) == ["cart loaded"] && cart.first?.label == "flask.app" && cart.first?.severity == .warning)
        #expect(cart.first?.metadata["cart.items"] == .int(3))
        let detail = try await watcher.ask(TelemetryControl.Trace(traceID: Self.trace.hex), TelemetryControl.TraceDetail.self)
        #expect(detail.spans.map(\.span) == [span])

        // The first counts what the second took: 3 log records and 2 spans, nothing dropped, no failed request.
        let counted = await eventually {
            let text = (try? await Self.metrics(of: first)) ?? ""
            return Self.sample(#"parley_otlp_forward_sent_total{signal="logs"}"#, in: text) == 3
                && Self.sample(#"parley_otlp_forward_sent_total{signal="traces"}"#, in: text) == 2
        }
        let metrics = try await Self.metrics(of: first)
        #expect(counted, "\(metrics)")
        #expect(Self.sample("parley_otlp_forward_failed_requests_total", in: metrics) == 0, "\(metrics)")
        #expect(Self.sample(#"parley_otlp_forward_dropped_total{signal="logs",reason="queue-full"}"#, in: metrics) == 0, "\(metrics)")
        #expect(Self.sample(#"parley_otlp_forward_queue{signal="logs"}"#, in: metrics) == 0, "\(metrics)")
        #expect(first.logLines(containing: "cannot forward").isEmpty)
    }

    @Test("a forward target nobody listens on: parleyd still stores everything, counts the failed requests, and says so in one line")
    func unreachableTarget() async throws {
        let port = try unusedPort()
        let daemon = try await ParleydProcess.start(environment: ["PARLEY_OTLP_FORWARD": "http://127.0.0.1:\(port)"])
        let watcher = try await TelemetryWatcher.start(on: daemon)
        let app = try await TelemetryApp.connect("Listr", to: daemon)
        try await app.send(TelemetryBatch(logs: [TelemetryWatcher.marker("stored anyway")]))
        _ = try await watcher.waitFor(message: "stored anyway")

        // The first attempt fails, and the retry a second later: two failed requests, still one line in the log.
        let failed = await eventually {
            (Self.sample("parley_otlp_forward_failed_requests_total", in: (try? await Self.metrics(of: daemon)) ?? "") ?? 0) >= 2
        }
        let metrics = try await Self.metrics(of: daemon)
        #expect(failed, "\(metrics)")
        let lines = daemon.logLines(containing: "cannot forward log records and spans to the OTLP receiver")
        #expect(lines.count == 1, "\(daemon.log)")
        #expect(lines.first?.contains("otlp-forward=http://127.0.0.1:\(port)") == true, "\(lines)")
        #expect(lines.first?.contains("reason=") == true, "\(lines)")
        #expect(daemon.isRunning)
    }

    @Test("a receiver that refuses the records (a wrong token): they are dropped and counted as refused, not retried, and parleyd says so once")
    func refusedByTheTarget() async throws {
        let directory = try ScratchDirectory(prefix: "otlp-forward")
        let (tokenPath, _) = try Self.tokenFile(in: directory)
        let second = try await ParleydProcess.start(name: "collector", environment: ["PARLEY_WEB_TOKEN_FILE": tokenPath])
        let first = try await ParleydProcess.start(
            environment: ["PARLEY_OTLP_FORWARD": try #require(second.ready.otlp), "PARLEY_OTLP_FORWARD_HEADERS": "authorization=Bearer%20wrong"])
        let app = try await TelemetryApp.connect("Listr", to: first)
        for batch in 1...2 {
            try await app.send(TelemetryBatch(logs: [TelemetryWatcher.marker("batch \(batch)")]))
            let dropped = await eventually {
                let text = (try? await Self.metrics(of: first)) ?? ""
                return Self.sample(#"parley_otlp_forward_dropped_total{signal="logs",reason="refused"}"#, in: text) == Double(batch)
            }
            let metrics = try await Self.metrics(of: first)
            #expect(dropped, "\(metrics)")
        }
        let metrics = try await Self.metrics(of: first)
        #expect(Self.sample("parley_otlp_forward_failed_requests_total", in: metrics) == 2, "one request per batch, none retried: \(metrics)")
        let lines = first.logLines(containing: "the OTLP receiver refused forwarded records")
        #expect(lines.count == 1 && lines.first?.contains("401") == true, "\(first.log)")
    }

    @Test("two parleyds forwarding to each other: a record goes round once, each stores it once, and the one it came back to drops it, counts it and says so once")
    func forwardingLoop() async throws {
        let (portA, portB) = (try unusedPort(), try unusedPort())
        let a = try await ParleydProcess.start(
            name: "laptop", environment: ["PARLEY_OTLP_LISTEN": "127.0.0.1:\(portA)", "PARLEY_OTLP_FORWARD": "http://127.0.0.1:\(portB)"])
        let b = try await ParleydProcess.start(
            name: "desktop", environment: ["PARLEY_OTLP_LISTEN": "127.0.0.1:\(portB)", "PARLEY_OTLP_FORWARD": "http://127.0.0.1:\(portA)"])
        let app = try await TelemetryApp.connect("Listr", to: a)
        for batch in 1...2 {
            try await app.send(TelemetryBatch(logs: [TelemetryWatcher.marker("round \(batch)")]))
            let cameBack = await eventually {
                let text = (try? await Self.metrics(of: a)) ?? ""
                return Self.sample(#"parley_otlp_forward_dropped_total{signal="logs",reason="loop"}"#, in: text) == Double(batch)
            }
            let metrics = try await Self.metrics(of: a)
            #expect(cameBack, "\(metrics)\n\(a.log)")
        }
        // The record came back after b had stored and forwarded it: both histories are as they end up.
        func counts(_ daemon: ParleydProcess) async throws -> [String] {
            let watcher = try await TelemetryWatcher.start(on: daemon)
            let sessions = try await watcher.ask(DebuggerControl.Sessions(), DebuggerControl.SessionList.self).sessions
            return sessions.map { "\($0.kind) \($0.appName) \($0.logCount)" }
        }
        #expect(try await counts(a) == ["parley Listr 2"], "the app's own session, and no copy of what came back")
        #expect(try await counts(b) == ["otlp Listr 2"])
        let watcher = try await TelemetryWatcher.start(on: b)
        let forwarded = try #require(try await watcher.ask(DebuggerControl.Sessions(), DebuggerControl.SessionList.self).sessions.first)
        guard case .array(let path)? = forwarded.resource["parley.forwarded_by"] else {
            Issue.record("no parley.forwarded_by in \(forwarded.resource)")
            return
        }
        #expect(path.count == 1, "the parleyd it came through: \(path)")
        #expect(Self.sample(#"parley_otlp_forward_sent_total{signal="logs"}"#, in: try await Self.metrics(of: b)) == 2)
        let lines = a.logLines(containing: "a forwarding loop")
        #expect(lines.count == 1, "\(a.log)")
        #expect(b.logLines(containing: "a forwarding loop").isEmpty)
    }
}
