import Foundation
import NIOCore
import Parley
import ParleyControl
import ParleyDebugger
import ParleyTelemetry
import ParleyTestSupport
import Testing

/// parleyd storing apps' log records and spans: real parleyd processes on loopback, apps as transceivers of the
/// tests' own sending `parley.telemetry.Batch` messages, a local client on the control socket asking for them.
@Suite("parleyd: log records and spans", .serialized, .timeLimit(.minutes(3)))
struct TelemetryTests {
    typealias App = TelemetryApp
    typealias Watcher = TelemetryWatcher
    static func marker(_ text: String) -> LogRecord { TelemetryWatcher.marker(text) }
    static func logLine(_ daemon: ParleydProcess, containing text: String, count: Int) async throws -> String {
        try await daemon.logLine(containing: text, count: count)
    }

    @Test("an app's log records and spans are stored in its session and come back through the control requests; parleyd's hello accepts the batch")
    func storedAndListed() async throws {
        let daemon = try await ParleydProcess.start()
        let watcher = try await Watcher.start(on: daemon)
        let app = try await App.connect("listr", to: daemon)
        #expect(app.parleyd.accepts.contains(TelemetryBatch.messageType))

        let trace = TraceID(hex: "4bf92f3577b34da6a3ce929d0e0e4736")!
        let root = SpanID.random()
        let logs = [
            LogRecord(time: .now, severity: .debug, label: "listr.store", message: "loading", metadata: ["count": .int(3)]),
            LogRecord(time: .now, severity: .error, label: "listr.net", message: "request timed out", traceID: trace, spanID: root),
        ]
        let spans = [
            SpanRecord(traceID: trace, spanID: root, name: "GET /items", kind: .client, start: .now, end: UnixNanos(UnixNanos.now.value + 5_000_000),
                attributes: ["http.request.method": .string("GET")]),
            SpanRecord(traceID: trace, spanID: .random(), parentSpanID: root, name: "decode", start: .now, end: .now),
        ]
        try await app.send(TelemetryBatch(logs: logs, spans: spans))
        try await app.send(TelemetryBatch(logs: [Self.marker("end")]))
        _ = try await watcher.waitFor(message: "end")

        let stored = try await watcher.logs()
        #expect(stored.count == 3 && Array(stored.prefix(2).map(\.record)) == logs && stored[2].record.message == "end")
        let session = stored[0].session
        #expect(try await watcher.logs(LogQuery(minimumSeverity: .error)).map(\.record.message) == ["request timed out"])
        #expect(try await watcher.logs(LogQuery(label: "listr.*")).count == 2)
        #expect(try await watcher.logs(LogQuery(text: "timed")).map(\.record.message) == ["request timed out"])
        #expect(try await watcher.logs(LogQuery(app: "listr", last: 1)).map(\.record.message) == ["end"])

        let traces = try await watcher.ask(TelemetryControl.Traces(), TelemetryControl.TraceList.self).traces
        #expect(traces.map(\.traceID) == [trace] && traces[0].name == "GET /items" && traces[0].spanCount == 2 && traces[0].sessions == [session])
        let detail = try await watcher.ask(TelemetryControl.Trace(traceID: "4BF92F35"), TelemetryControl.TraceDetail.self)
        #expect(Set(detail.spans.map(\.span)) == Set(spans))
        let clientSpans = try await watcher.ask(TelemetryControl.Spans(session: session, kind: .client), TelemetryControl.SpanPage.self).page
        #expect(clientSpans.items.map(\.span) == [spans[0]] && clientSpans.total == 1)

        // The same session as the app's states, counted in the session list.
        let sessions = try await watcher.ask(DebuggerControl.Sessions(), DebuggerControl.SessionList.self).sessions
        #expect(sessions.map(\.id) == [session] && sessions[0].logCount == 3 && sessions[0].spanCount == 2 && sessions[0].appName == "listr")

        // Codes of their own for a trace that is not there and a prefix of several.
        await #expect {
            try await watcher.ask(TelemetryControl.Trace(traceID: "00000000aaaa"), TelemetryControl.TraceDetail.self)
        } throws: { error in
            guard case TransceiverError.remoteError(let code, let text) = error else { return false }
            return ControlErrorCode(code) == .noSuchTrace && text.contains("00000000aaaa")
        }
        await #expect {
            try await watcher.ask(TelemetryControl.Trace(traceID: "xyz"), TelemetryControl.TraceDetail.self)
        } throws: { error in
            guard case TransceiverError.remoteError(let code, _) = error else { return false }
            return ControlErrorCode(code) == .invalidRequest
        }
        try await app.send(TelemetryBatch(spans: [SpanRecord(traceID: TraceID(hex: "4bf92f35000000000000000000000001")!, spanID: .random(), name: "twin", start: .now, end: .now)]))
        try await app.send(TelemetryBatch(logs: [Self.marker("twin stored")]))
        _ = try await watcher.waitFor(message: "twin stored")
        await #expect {
            try await watcher.ask(TelemetryControl.Trace(traceID: "4bf92f35"), TelemetryControl.TraceDetail.self)
        } throws: { error in
            guard case TransceiverError.remoteError(let code, _) = error else { return false }
            return ControlErrorCode(code) == .ambiguousTrace
        }

        // A follower with filters is sent only what passes them.
        let picky = try await Watcher.start(on: daemon, query: LogQuery(minimumSeverity: .warning, label: "listr.*", text: "disk"))
        try await app.send(TelemetryBatch(logs: [
            LogRecord(time: .now, severity: .info, label: "listr.store", message: "disk fine"),
            LogRecord(time: .now, severity: .warning, label: "other", message: "disk low"),
            LogRecord(time: .now, severity: .warning, label: "listr.store", message: "network slow"),
            LogRecord(time: .now, severity: .critical, label: "listr.store", message: "disk full"),
        ]))
        #expect(try await picky.appended.next().record.message == "disk full")

        await app.transceiver.stop()
        await watcher.transceiver.stop()
        await picky.transceiver.stop()
        #expect(try await daemon.stop() == 0)
    }

    @Test("batches and states sent at once on a new connection go to the one session begun for it, all of them")
    func batchesAndStatesShareOneSession() async throws {
        let daemon = try await ParleydProcess.start()
        let watcher = try await Watcher.start(on: daemon)
        let app = try await App.connect("listr", to: daemon)
        // Nothing waits between them: a batch is stored after its handler returns, while the state's handler runs.
        for index in 0..<5 {
            try await app.send(TelemetryBatch(logs: [LogRecord(time: .now, severity: .info, label: "listr", message: "line \(index)")]))
            let state = StateRecord(action: "step \(index)", state: ByteBuffer(string: #"{"n":\#(index)}"#))
            try await app.transceiver.sendRaw(typeName: StateRecord.messageType, payload: state.encoded(), to: app.parleyd.id)
        }
        try await app.send(TelemetryBatch(logs: [Self.marker("end")]))
        _ = try await watcher.waitFor(message: "end")
        let sessions = try await watcher.ask(DebuggerControl.Sessions(), DebuggerControl.SessionList.self).sessions
        #expect(sessions.map(\.appName) == ["listr"], "\(sessions)")
        #expect(sessions.first?.logCount == 6 && sessions.first?.entryCount == 5, "\(sessions)")
    }

    @Test("hostile batches are refused or cut with a clear log line naming the app; the app stays connected, others are unaffected, nothing stored is lost")
    func hostileBatches() async throws {
        let daemon = try await ParleydProcess.start()
        let watcher = try await Watcher.start(on: daemon)
        let hostile = try await App.connect("hostile", to: daemon)
        let bystander = try await App.connect("bystander", to: daemon)
        try await hostile.send(TelemetryBatch(logs: [Self.marker("before")]))
        _ = try await watcher.waitFor(message: "before")

        // 9 MiB: refused before it is read.
        var big = ByteBuffer(string: #"{"logs":[{"timeUnixNano":1,"severity":"info","message":""#)
        big.writeRepeatingByte(UInt8(ascii: "x"), count: 9 << 20)
        big.writeString(#""}]}"#)
        try await hostile.send(big)
        let tooLarge = try await Self.logLine(daemon, containing: "telemetry batch refused", count: 1)
        #expect(tooLarge.contains("over the 8388608-byte limit") && tooLarge.contains("hostile"), "\(tooLarge)")

        // Not JSON, and JSON whose text is not UTF-8: refused whole, saying why.
        try await hostile.send(ByteBuffer(string: #"{"logs":[{"timeUnixNano":1,"#))
        let malformed = try await Self.logLine(daemon, containing: "telemetry batch refused", count: 2)
        #expect(malformed.contains("not valid"), "\(malformed)")
        var invalidUTF8 = ByteBuffer(string: #"{"logs":[{"timeUnixNano":1,"severity":"info","message":""#)
        invalidUTF8.writeBytes([0xFF, 0xFE])
        invalidUTF8.writeString(#""}]}"#)
        try await hostile.send(invalidUTF8)
        let notUTF8 = try await Self.logLine(daemon, containing: "telemetry batch refused", count: 3)
        #expect(notUTF8.contains("hostile") && notUTF8.contains("not UTF-8 (at byte 56)"), "\(notUTF8)")

        // A span whose trace id is all zeros is refused alone; the good records of its batch are stored.
        let zero = #"{"traceId":"00000000000000000000000000000000","spanId":"00f067aa0ba902b7","name":"bad","startTimeUnixNano":1,"endTimeUnixNano":2}"#
        let good = #"{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"00f067aa0ba902b7","name":"good","startTimeUnixNano":1,"endTimeUnixNano":2}"#
        try await hostile.send(ByteBuffer(string: #"{"spans":[\#(good),\#(zero)],"logs":[{"timeUnixNano":5,"severity":"info","message":"beside the bad span"}]}"#))
        _ = try await watcher.waitFor(message: "beside the bad span")
        let refusedSpan = try await Self.logLine(daemon, containing: "telemetry records refused", count: 1)
        #expect(refusedSpan.contains("spans[1].traceId") && refusedSpan.contains("hostile"), "\(refusedSpan)")
        let trace = try await watcher.ask(TelemetryControl.Trace(traceID: "4bf92f3577b34da6a3ce929d0e0e4736"), TelemetryControl.TraceDetail.self)
        #expect(trace.spans.map(\.span.name) == ["good"])

        // A message of 1 MiB is cut to 32 KiB (200 000 metadata keys are cut with the load tests: FaultTests).
        let long = String(repeating: "ü", count: 1 << 19)
        try await hostile.send(TelemetryBatch(logs: [LogRecord(time: .now, severity: .info, label: "t", message: long), Self.marker("long sent")]))
        let afterLong = try await watcher.waitFor(message: "long sent")
        _ = try await Self.logLine(daemon, containing: "telemetry records cut to the limits", count: 1)
        let stored = try await watcher.logs(LogQuery(session: afterLong.session))
        let cut = try #require(stored.first { $0.record.label == "t" })
        #expect(cut.record.message.utf8.count <= 32 * 1024 && cut.record.message.hasSuffix("…") && cut.record.message.hasPrefix("üüü"))

        // The hostile app is still connected and heard; the bystander too; the first record is still there.
        try await hostile.send(TelemetryBatch(logs: [Self.marker("hostile still heard")]))
        try await bystander.send(TelemetryBatch(logs: [Self.marker("bystander heard")]))
        _ = try await watcher.waitFor(messages: ["hostile still heard", "bystander heard"])
        #expect(hostile.transceiver.peers.contains { $0.id == hostile.parleyd.id })
        let all = try await watcher.logs(LogQuery(limit: 500)).map(\.record.message)
        #expect(all.first == "before" && all.contains("beside the bad span") && all.contains("bystander heard"))
        #expect(!daemon.log.contains("connection closed"), "\(daemon.log)")

        let status = try await daemon.ctl(["status", "--json"])
        #expect(status.status == 0, "\(status)")

        await hostile.transceiver.stop()
        await bystander.transceiver.stop()
        await watcher.transceiver.stop()
        #expect(try await daemon.stop() == 0)
    }

    @Test("log records are not lost when parleyd is killed: what it stored is there after a restart, in the app's ended session")
    func survivesSIGKILL() async throws {
        let daemon = try await ParleydProcess.start()
        let watcher = try await Watcher.start(on: daemon)
        let app = try await App.connect("app", to: daemon)
        try await app.send(TelemetryBatch(logs: (0..<50).map { LogRecord(time: .now, severity: .info, label: "n", message: "record \($0)") }))
        _ = try await watcher.waitFor(message: "record 49")
        daemon.signal(SIGKILL)
        _ = await daemon.waitForExit(timeout: .seconds(10))
        await app.transceiver.stop()
        await watcher.transceiver.stop()

        let restarted = try await ParleydProcess.start(in: daemon.directory)
        let result = try await restarted.ctl(["sessions", "--json"])
        #expect(result.status == 0, "\(result)")
        let after = try await Watcher.start(on: restarted)
        let logs = try await after.logs()
        #expect(logs.map(\.record.message) == (0..<50).map { "record \($0)" })
        let sessions = try await after.ask(DebuggerControl.Sessions(), DebuggerControl.SessionList.self).sessions
        #expect(sessions.count == 1 && sessions[0].ended != nil && sessions[0].logCount == 50)
        await after.transceiver.stop()
        #expect(try await restarted.stop() == 0)
    }
}
