import Foundation
import Parley
import ParleyDebugger
import ParleyTelemetry
import ParleyTestSupport
import Testing

/// Real components: parleyd, and parley-traced-http's Hummingbird server and AsyncHTTPClient client, each in a
/// process of its own and bootstrapped with ParleyTracer and ParleyLogHandler pointed at parleyd's address. What
/// parleyd stored is read through its control socket. Each wait is for an event: a line a process prints, its
/// exit, or parleyd storing a log record (followed with `parley.telemetry.FollowLogs`), after which the question
/// is asked again.
@Suite("Traced apps and parleyd")
struct TracedAppsTests {
    @Test("a traced server and a traced client, in two processes, make one trace in parleyd: the client span (method, URL, status) and the server span under it")
    func oneTraceAcrossTwoProcesses() async throws {
        let daemon = try await ParleydProcess.start()
        let control = try await ControlClient.connect(to: daemon)
        let home = try ScratchDirectory(prefix: "traced-http")

        let server = try ChildProcess("parley-traced-http", ["serve", "--port", "0", "--debugger", "127.0.0.1:\(daemon.port)"], environment: home.environment)
        let port = try await server.waitFor { output in
            output.split(separator: "\n").first { $0.hasPrefix("listening on ") }.flatMap { Int($0.dropFirst("listening on ".count)) }
        }
        let client = try ChildProcess(
            "parley-traced-http", ["get", "http://127.0.0.1:\(port)/hello", "--debugger", "127.0.0.1:\(daemon.port)"], environment: home.environment)
        #expect(try await client.exitStatus(within: .seconds(30)) == 0, "\(client.stderr)")
        #expect(client.stdout == "200 hello\n")
        #expect(try await server.stop(SIGTERM, within: .seconds(30)) == 0, "\(server.stderr)")

        // Each app's last line is logged after its span ended, and leaves after it.
        let spans = try await control.askAgainOnEachStoredLog { () -> [SpanRecord]? in
            let traces = try await control.request(TelemetryControl.Traces(), expecting: TelemetryControl.TraceList.self).traces
            guard traces.count == 1, let trace = traces.first else { return nil }
            let detail = try await control.request(TelemetryControl.Trace(traceID: trace.traceID.hex), expecting: TelemetryControl.TraceDetail.self)
            let spans = detail.spans.map(\.span)
            return spans.contains { $0.kind == .client } && spans.contains { $0.kind == .server } ? spans : nil
        }
        let clientSpan = try #require(spans.first { $0.kind == .client })
        let serverSpan = try #require(spans.first { $0.kind == .server })
        #expect(spans.count == 2)
        #expect(clientSpan.parentSpanID == nil)
        #expect(clientSpan.attributes["http.request.method"] == .string("GET"))
        #expect(clientSpan.attributes["url.full"] == .string("http://127.0.0.1:\(port)/hello"))
        #expect(clientSpan.attributes["http.status_code"] == .int(200))
        #expect(serverSpan.traceID == clientSpan.traceID)
        #expect(serverSpan.parentSpanID == clientSpan.spanID)
        #expect(serverSpan.name == "/hello")
        #expect(serverSpan.attributes["http.response.status_code"] == .int(200))
        #expect(serverSpan.start >= clientSpan.start)

        // The line the route logged is tied to the server's span, and is in the same session: the handler and the
        // tracer of one app share one exporter, one connection.
        let logs = try await control.request(TelemetryControl.Logs(query: LogQuery(label: "traced.server")), expecting: TelemetryControl.LogPage.self)
        let requested = try #require(logs.page.items.first { $0.record.message == "hello requested" })
        #expect(requested.record.traceID == serverSpan.traceID)
        #expect(requested.record.spanID == serverSpan.spanID)
        let detail = try await control.request(TelemetryControl.Trace(traceID: serverSpan.traceID.hex), expecting: TelemetryControl.TraceDetail.self)
        let sessions = Dictionary(detail.spans.map { ($0.span.kind, $0.session) }) { first, _ in first }
        #expect(sessions[.server] == requested.session)
        #expect(sessions[.client] != sessions[.server])

        await control.stop()
        #expect(try await daemon.stop() == 0)
    }

    @Test("an app whose handler is at notice logs at every level: parleyd stores exactly notice and above, with the secrets in the metadata redacted")
    func levelsAndRedaction() async throws {
        let daemon = try await ParleydProcess.start()
        let control = try await ControlClient.connect(to: daemon)
        let home = try ScratchDirectory(prefix: "traced-levels")
        let app = try ChildProcess(
            "parley-traced-http", ["log-levels", "--level", "notice", "--debugger", "127.0.0.1:\(daemon.port)"], environment: home.environment)
        #expect(try await app.exitStatus(within: .seconds(30)) == 0, "\(app.stderr)")

        // The critical line is the app's last.
        let stored = try await control.askAgainOnEachStoredLog { () -> [StoredLogRecord]? in
            let page = try await control.request(TelemetryControl.Logs(query: LogQuery(label: "traced.levels")), expecting: TelemetryControl.LogPage.self)
            return page.page.items.contains { $0.record.severity == .critical } ? page.page.items : nil
        }
        #expect(stored.map(\.record.severity) == [.notice, .warning, .error, .critical])
        #expect(stored.map(\.record.message) == ["notice line", "warning line", "error line", "critical line"])
        for record in stored.map(\.record) {
            #expect(record.metadata["user"] == .string("ana"))
            #expect(record.metadata["password"] == SecretRedaction.replacement)
            #expect(record.metadata["request"] == .map(["Authorization": SecretRedaction.replacement, "path": .string("/items")]))
        }
        await control.stop()
        #expect(try await daemon.stop() == 0)
    }
}

// MARK: - Support

extension ScratchDirectory {
    /// For a child that persists its peer id: under this directory, not the user's.
    var environment: [String: String] { ["HOME": path, "XDG_STATE_HOME": file("state")] }
}

/// A local client on parleyd's control socket that follows every log record parleyd stores.
struct ControlClient {
    let transceiver: Transceiver
    let parleyd: Peer
    let stored: Inbox<StoredLogRecord>

    static func connect(to daemon: ParleydProcess) async throws -> ControlClient {
        let transceiver = Transceiver(configuration: TransceiverConfiguration(name: "traced-test", identity: .ephemeral, listenHost: nil, port: 0))
        let stored = Inbox<StoredLogRecord>()
        transceiver.receive(TelemetryControl.LogAppended.self) { appended, _ in stored.put(appended.record) }
        try await transceiver.start()
        let parleyd = try await transceiver.connect(toUnixSocket: daemon.controlSocket)
        let client = ControlClient(transceiver: transceiver, parleyd: parleyd, stored: stored)
        _ = try await client.request(TelemetryControl.FollowLogs(query: LogQuery()), expecting: TelemetryControl.FollowingLogs.self)
        return client
    }

    func request<Request: Encodable & Sendable, Reply: Decodable & Sendable>(_ request: Request, expecting reply: Reply.Type) async throws -> Reply {
        try await transceiver.request(request, from: parleyd, expecting: reply, timeout: .seconds(10))
    }

    /// `question`'s answer once it has one: asked now, and again each time parleyd stores a log record.
    func askAgainOnEachStoredLog<Answer>(timeout: Duration = .seconds(30), _ question: () async throws -> Answer?) async throws -> Answer {
        while true {
            if let answer = try await question() { return answer }
            _ = try await stored.next(timeout: timeout)
        }
    }

    func stop() async { await transceiver.stop() }
}
