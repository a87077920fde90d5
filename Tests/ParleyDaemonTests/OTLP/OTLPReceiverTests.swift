import Foundation
import ParleyDebugger
import ParleyTelemetry
import ParleyTestSupport
import Testing

/// parleyd's OTLP/HTTP receiver over real sockets: a real parleyd, curl (Debian's) as the exporter, a local client
/// on the control socket reading back what was stored.
@Suite("parleyd: the OTLP/HTTP receiver", .serialized, .timeLimit(.minutes(3)))
struct OTLPReceiverTests {
    static func spans(instance: String, spanID: String) -> String {
        """
        {"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"checkout"}},
          {"key":"service.instance.id","value":{"stringValue":"\(instance)"}},{"key":"telemetry.sdk.language","value":{"stringValue":"python"}}]},
          "scopeSpans":[{"scope":{"name":"flask"},"spans":[{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"\(spanID)",
          "name":"GET /cart","kind":2,"startTimeUnixNano":"1764288000000000000","endTimeUnixNano":"1764288000250000000",
          "attributes":[{"key":"http.response.status_code","value":{"intValue":"200"}}]}]}]}]}
        """
    }

    /// POSTs `body` as JSON to `url` with curl; the status code and the body of the answer.
    static func post(_ url: String, _ body: String, headers: [String] = []) async throws -> (status: String, body: String) {
        let arguments = ["-s", "-w", "\n%{http_code}", "-H", "Content-Type: application/json", "--data-binary", body] + headers.flatMap { ["-H", $0] } + [url]
        let output = try await ChildProcess.run("/usr/bin/curl", arguments).stdout
        let lines = output.split(separator: "\n", omittingEmptySubsequences: false)
        return (String(lines.last ?? ""), lines.dropLast().joined(separator: "\n"))
    }

    @Test("an export becomes a session of kind otlp named by service.name with its resource; the same instance records into the same session")
    func exportBecomesSession() async throws {
        let daemon = try await ParleydProcess.start()
        let endpoint = try #require(try await daemon.waitUntilReady().otlp)
        let first = try await Self.post(endpoint + "/v1/traces", Self.spans(instance: "i-7", spanID: "eee19b7ec3c1b174"))
        #expect(first.status == "200", "answer: \(first.body)")
        let second = try await Self.post(endpoint + "/v1/traces", Self.spans(instance: "i-7", spanID: "eee19b7ec3c1b175"))
        #expect(second.status == "200")
        let other = try await Self.post(endpoint + "/v1/traces", Self.spans(instance: "i-8", spanID: "eee19b7ec3c1b176"))
        #expect(other.status == "200")

        let watcher = try await TelemetryWatcher.start(on: daemon)
        let sessions = try await watcher.ask(DebuggerControl.Sessions(), DebuggerControl.SessionList.self).sessions
        #expect(sessions.map(\.kind) == [.otlp, .otlp])
        #expect(sessions.map(\.appName) == ["checkout", "checkout"])
        #expect(sessions.map(\.spanCount) == [2, 1])
        #expect(sessions[0].resource["service.instance.id"] == .string("i-7"))
        #expect(sessions[0].resource["telemetry.sdk.language"] == .string("python"))
        #expect(sessions[0].host == "127.0.0.1" && sessions[0].isOpen)
        let traces = try await watcher.ask(TelemetryControl.Traces(), TelemetryControl.TraceList.self).traces
        #expect(traces.count == 1 && traces[0].spanCount == 3 && traces[0].name == "GET /cart")
        #expect(Set(traces[0].sessions) == Set(sessions.map(\.id)))

        // Host as for the web debugger: a name parleyd does not answer to is refused before anything is read.
        let rebound = try await Self.post(endpoint + "/v1/traces", Self.spans(instance: "i-9", spanID: "eee19b7ec3c1b177"), headers: ["Host: evil.example"])
        #expect(rebound.status == "421")
        // Stopping parleyd ends the open OpenTelemetry sessions.
        _ = try await daemon.stop()
    }

    @Test("with its port taken by another program, parleyd says so once, says null in its readiness line, and runs without it")
    func portTaken() async throws {
        let first = try await ParleydProcess.start()
        let taken = try #require(try await first.waitUntilReady().otlp).replacingOccurrences(of: "http://", with: "")
        let second = try await ParleydProcess.start(environment: ["PARLEY_OTLP_LISTEN": taken])
        #expect(try await second.waitUntilReady().otlp == nil)
        #expect(second.logLines(containing: "the OTLP receiver is off").count == 1)
        #expect(second.logLines(containing: "already in use").count == 1)
        let status = try await second.ctl(["status"])
        #expect(status.status == 0)
    }
}
