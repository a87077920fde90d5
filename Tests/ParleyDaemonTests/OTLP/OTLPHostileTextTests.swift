import Foundation
import ParleyDebugger
import ParleyTelemetry
import ParleyTestSupport
import Testing

/// What an OpenTelemetry sender writes in names, keys, values and messages reaches a person only as text: bytes
/// that are not UTF-8 are stored as U+FFFD, and escape sequences, stored as sent, are printed escaped by parleyctl.
@Suite("parleyd: hostile text through the OTLP receiver", .serialized, .timeLimit(.minutes(2)))
struct OTLPHostileTextTests {
    static let trace = "0af7651916cd43dd8448eb211c80319c"
    /// A colour change, a terminal title change ended by BEL, a bidirectional override and a C1 control (CSI).
    static let escapes = "\u{1B}[31mred\u{1B}[0m\u{1B}]0;owned\u{07}\u{202E}txt\u{9B}2J"
    static let notUTF8: [UInt8] = [0xC3, 0x28, 0xFF]

    @Test("text that is not UTF-8 is stored with U+FFFD and said in the log; escape sequences are stored as sent and printed escaped")
    func hostileText() async throws {
        let daemon = try await ParleydProcess.start()
        let client = try OTLPTestClient(daemon: daemon)
        let name = Array("GET /".utf8) + Array(Self.escapes.utf8) + Self.notUTF8
        let attributes = OTLPWire.attribute(9, key: Array("k\(Self.escapes)".utf8) + Self.notUTF8, value: Self.notUTF8 + Array(Self.escapes.utf8))
        let span = OTLPWire.span(trace: OTLPWire.id(Self.trace), id: OTLPWire.id("b7ad6b7169203331"), name: name, attributes: attributes)
        let traces = try await client.post("/v1/traces", body: OTLPWire.traces(service: "hostile", spans: [span]))
        #expect(traces.status == 200, "\(traces)")
        let logs = try await client.post("/v1/logs", body: OTLPWire.logs(service: "hostile", messages: [Array("disk \(Self.escapes) ".utf8) + Self.notUTF8]))
        #expect(logs.status == 200, "\(logs)")

        let repairedTraces = try await daemon.logLine(containing: "OTLP text that is not UTF-8 stored with U+FFFD", count: 1)
        #expect(repairedTraces.contains("texts=3") && repairedTraces.contains("signal=traces") && repairedTraces.contains("client=127.0.0.1"), "\(repairedTraces)")
        let repairedLogs = try await daemon.logLine(containing: "OTLP text that is not UTF-8 stored with U+FFFD", count: 2)
        #expect(repairedLogs.contains("texts=1") && repairedLogs.contains("signal=logs"), "\(repairedLogs)")

        // Stored: the escapes as sent, each bad sequence as U+FFFD (C3 28: one for C3, then "("; FF: one).
        let replaced = "\u{FFFD}(\u{FFFD}"
        let watcher = try await TelemetryWatcher.start(on: daemon)
        let stored = try #require(try await watcher.ask(TelemetryControl.Trace(traceID: Self.trace), TelemetryControl.TraceDetail.self).spans.first)
        #expect(stored.span.name == "GET /" + Self.escapes + replaced)
        #expect(stored.span.attributes["k\(Self.escapes)\(replaced)"] == .string(replaced + Self.escapes))
        let record = try #require(try await watcher.logs(LogQuery(app: "hostile")).first)
        #expect(record.record.message == "disk \(Self.escapes) \(replaced)")
        await watcher.transceiver.stop()

        // Printed: never a control character, the escapes shown as text.
        for arguments in [["trace", Self.trace, "-v"], ["traces"], ["logs", "hostile"], ["logs", "hostile", "--json"]] {
            let output = try await daemon.ctl(arguments)
            #expect(output.status == 0, "parleyctl \(arguments): \(output.stderr)")
            let controls = output.stdout.unicodeScalars.filter { $0 != "\n" && ($0.value < 0x20 || (0x7F...0x9F).contains($0.value) || $0 == "\u{202E}") }
            #expect(controls.isEmpty, "parleyctl \(arguments.joined(separator: " ")) printed \(controls.map { String($0.value, radix: 16) })")
            #expect(output.stdout.contains("red") && output.stdout.contains("\u{FFFD}"), "parleyctl \(arguments): \(output.stdout)")
        }
        let shown = try await daemon.ctl(["trace", Self.trace, "-v"]).stdout
        #expect(shown.contains(#"\x1b[31mred\x1b[0m"#) && shown.contains(#"\u202e"#), "\(shown)")
        #expect(try await daemon.stop() == 0)
    }
}
