import Foundation
import ParleyTestSupport
import Testing

/// The Listr example's log lines and traced request, as a new user meets them: listr-example and parleyd as
/// processes, parleyctl reading them back.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct ListrTelemetryTests {
    @Test("Listr's log lines and its traced HTTP request reach parleyd: logs -f prints them as they come, traces and trace show the app's span around AsyncHTTPClient's")
    func logsAndTrace() async throws {
        let listr = try await ParleyCtlTests.Listr()
        let daemon = try await ParleydProcess.start(staticPeer: listr.port, arguments: ["--web-listen", "127.0.0.1:0"])
        let web = try #require(daemon.webURL)
        let follower = try ChildProcess("parleyctl", ["logs", "listr", "-f", "--socket", daemon.controlSocket])
        defer { kill(follower.pid, SIGKILL) }

        let added = try await daemon.ctl(["send", "AddItemCommand", #"{"title":"milk"}"#, "--reply", "--wait-peer", "10"])
        #expect(added.status == 0, "\(added)")
        let url = web + "api/sessions"
        #expect(try await daemon.ctl(["set", "listr", "debug.url", url]).status == 0)
        let invoked = try await daemon.ctl(["invoke", "listr", "debug.request"])
        #expect(invoked.status == 0 && invoked.stdout.contains("200 from \(url)"), "\(invoked)")

        // Listr writes this line once the request's span has ended, and parleyd stores what one app sends in order.
        let printed = try await follower.waitFor(timeout: .seconds(30)) { $0.contains("traced request done") ? $0 : nil }
        #expect(printed.contains("item added") && printed.contains("title=milk"), "\(printed)")
        #expect(printed.contains("fetched \(url)") && printed.contains("status=200"), "\(printed)")

        let traces = try await daemon.ctl(["traces", "listr"])
        #expect(traces.status == 0 && traces.stdout.contains("listr.fetch"), "\(traces)")
        let id = try #require(traces.stdout.split(separator: "\n").first { $0.contains("listr.fetch") }?.split(separator: " ").first.map(String.init))
        let trace = try await daemon.ctl(["trace", id])
        #expect(trace.status == 0, "\(trace)")
        let lines = trace.stdout.split(separator: "\n")
        let outer = try #require(lines.firstIndex { $0.contains("listr.fetch") })
        let inner = try #require(lines.firstIndex { $0.contains("GET") && $0.contains("client") }, "\(trace.stdout)")
        #expect(outer < inner, "\(trace.stdout)")
        let indent = { (line: Substring) in line.prefix { $0 == " " }.count }
        #expect(indent(lines[outer]) < indent(lines[inner]), "\(trace.stdout)")
    }
}
