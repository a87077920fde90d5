import Foundation
import NIOCore
import ParleyDebugger
import ParleyHistory
import ParleyJSON
import ParleyTelemetry
import Testing

/// `testTime(seconds)` in nanoseconds, exactly (a Date would round at this size).
func nanos(_ seconds: Double) -> UnixNanos {
    UnixNanos(UInt64(Int64((1_800_000_000 + seconds) * 1000)) * 1_000_000)
}

func log(
    _ seconds: Double, _ severity: LogSeverity = .info, label: String = "app.main", _ message: String = "hello", metadata: TelemetryAttributes = [:],
    trace: TraceID? = nil
) -> LogRecord {
    LogRecord(time: nanos(seconds), severity: severity, label: label, message: message, metadata: metadata, source: "App", file: "Main.swift",
        function: "run()", line: 7, traceID: trace, spanID: trace == nil ? nil : SpanID.random())
}

func span(
    _ seconds: Double, duration: Double = 0.5, name: String = "GET /items", kind: SpanRecord.Kind = .client, trace: TraceID = .random(),
    id: SpanID = .random(), parent: SpanID? = nil, status: SpanRecord.Status = .unset, attributes: TelemetryAttributes = [:]
) -> SpanRecord {
    SpanRecord(
        traceID: trace, spanID: id, parentSpanID: parent, name: name, kind: kind, start: nanos(seconds), end: nanos(seconds + duration),
        status: status, attributes: attributes, events: [.init(name: "retry", time: nanos(seconds + duration / 2), attributes: ["n": .int(1)])])
}

@Suite("History: log records and spans")
struct HistoryTelemetryTests {
    @Test("stored log records come back numbered and whole; filters by severity, label glob, words of the message, time, app and session")
    func logsAndFilters() async throws {
        try await withStore { store, _ in
            let listr = try await store.beginSession(peerID: "aaaa-1", appName: "Listr", kind: .parley, at: testTime(0))
            let other = try await store.beginSession(peerID: "bbbb-2", appName: "Other", kind: .parley, at: testTime(0))
            let records = [
                log(1, .debug, label: "listr.store", "loading items", metadata: ["count": .int(3), "tags": .array([.string("a")])]),
                log(2, .info, label: "listr.net", "request timeout after 3 s"),
                log(3, .warning, label: "listr.store", "disk almost full"),
                log(4, .error, label: "listr.ui", "cannot render: timeouts everywhere"),
                log(5, .critical, label: "other.thing", "100% broken!"),
            ]
            let stored = try await store.appendTelemetry(TelemetryBatch(logs: records), to: listr.id, at: testTime(6)).logs
            #expect(stored.map(\.record) == records)
            #expect(stored.map(\.session) == Array(repeating: listr.id, count: 5))
            #expect(stored.map(\.id) == stored.map(\.id).sorted() && Set(stored.map(\.id)).count == 5)
            let elsewhere = try await store.appendTelemetry(TelemetryBatch(logs: [log(1, .error, label: "listr.store", "timeout in other")]), to: other.id).logs
            #expect(try await store.logRecord(stored[0].id) == stored[0])
            await #expect(throws: HistoryStoreError.noSuchLogRecord(999_999)) { try await store.logRecord(999_999) }
            #expect(try await store.newestLogID() == elsewhere[0].id)

            func ids(_ query: LogQuery) async throws -> [Int64] { try await store.logs(query).items.map(\.id) }
            #expect(try await ids(LogQuery(session: listr.id)) == stored.map(\.id))
            #expect(try await ids(LogQuery()) == stored.map(\.id) + [elsewhere[0].id])
            #expect(try await ids(LogQuery(session: listr.id, minimumSeverity: .warning)) == stored[2...].map(\.id))
            #expect(try await ids(LogQuery(session: listr.id, label: "listr.st*")) == [stored[0].id, stored[2].id])
            #expect(try await ids(LogQuery(session: listr.id, label: "listr.??")) == [stored[3].id])
            // Words in order, the last one as a prefix; any case.
            #expect(try await ids(LogQuery(session: listr.id, text: "TIMEOUT")) == [stored[1].id, stored[3].id])
            #expect(try await ids(LogQuery(session: listr.id, text: "request time")) == [stored[1].id])
            #expect(try await ids(LogQuery(session: listr.id, text: "time request")) == [])
            // A text without words is found as it is.
            #expect(try await ids(LogQuery(session: listr.id, text: "%")) == [stored[4].id])
            #expect(try await ids(LogQuery(session: listr.id, since: nanos(4))) == [stored[3].id, stored[4].id])
            #expect(try await ids(LogQuery(app: "Other")) == [elsewhere[0].id])
            #expect(try await ids(LogQuery(app: "AAAA")) == stored.map(\.id), "an app is also chosen by a prefix of its peer id")
            #expect(try await ids(LogQuery(app: "Nobody")) == [])
            await #expect(throws: HistoryStoreError.noSuchSession(999_999)) { try await store.logs(LogQuery(session: 999_999)) }
            await #expect(throws: HistoryStoreError.self) { try await store.logs(LogQuery(label: "trailing\\")) }

            // Paging by id, the newest N, and totals that count every match.
            let first = try await store.logs(LogQuery(session: listr.id, limit: 2))
            #expect(first.items.map(\.id) == stored[0..<2].map(\.id) && first.total == 5 && first.nextAfter == stored[1].id)
            let second = try await store.logs(LogQuery(session: listr.id, after: first.nextAfter, limit: 10))
            #expect(second.items.map(\.id) == stored[2...].map(\.id) && second.nextAfter == nil && second.total == 5)
            let newest = try await store.logs(LogQuery(session: listr.id, last: 2))
            #expect(newest.items.map(\.id) == stored[3...].map(\.id))
            let newestFirstPage = try await store.logs(LogQuery(session: listr.id, last: 3, limit: 2))
            #expect(newestFirstPage.items.map(\.id) == stored[2..<4].map(\.id) && newestFirstPage.nextAfter == stored[3].id)
        }
    }

    @Test("the timeline merges states, log records and spans by time, ties by kind then id, and pages by position")
    func timelineOrder() async throws {
        try await withStore { store, _ in
            let session = try await store.beginSession(peerID: "p", appName: "Listr", kind: .parley, at: testTime(0))
            let s1 = try await store.append(record("load", "{}"), to: session.id, at: testTime(1))
            let s2 = try await store.append(record("add", "{}"), to: session.id, at: testTime(3))
            // Written after the states but timed between and at them: the timeline goes by the records' own times.
            let logs = try await store.appendTelemetry(
                TelemetryBatch(logs: [log(3, .info, "at the second state"), log(2, .debug, "between"), log(0.5, .error, "before everything")]),
                to: session.id, at: testTime(10)).logs
            let trace = TraceID.random()
            let spans = try await store.appendTelemetry(
                TelemetryBatch(spans: [span(3, trace: trace), span(1.5, name: "render", kind: .internal, trace: trace)]), to: session.id, at: testTime(10)
            ).spans
            let page = try await store.timeline(TimelineQuery(session: session.id))
            let expected: [TimelineItem] = [
                .log(logs[2]), .state(s1), .span(spans[1]), .log(logs[1]), .state(s2), .log(logs[0]), .span(spans[0]),
            ]
            #expect(page.items == expected)
            #expect(page.total == 7 && page.nextAfter == nil)
            #expect(page.items.map(\.time) == page.items.map(\.time).sorted())

            let middle = try await store.timeline(TimelineQuery(session: session.id, offset: 2, limit: 3))
            #expect(middle.items == Array(expected[2..<5]) && middle.total == 7)
            #expect(try await store.timeline(TimelineQuery(session: session.id, offset: 7)).items.isEmpty)

            // Filters: kinds; severity touches log records only; the label pattern log labels and span names; text
            // all three (states by their action).
            #expect(try await store.timeline(TimelineQuery(session: session.id, kinds: [.state, .span])).items
                == [.state(s1), .span(spans[1]), .state(s2), .span(spans[0])])
            let severe = try await store.timeline(TimelineQuery(session: session.id, minimumSeverity: .info))
            #expect(severe.items == [.log(logs[2]), .state(s1), .span(spans[1]), .state(s2), .log(logs[0]), .span(spans[0])] && severe.total == 6)
            #expect(try await store.timeline(TimelineQuery(session: session.id, kinds: [.log, .span], label: "rend*")).items == [.span(spans[1])])
            #expect(try await store.timeline(TimelineQuery(session: session.id, text: "ADD")).items == [.state(s2)])
            #expect(try await store.timeline(TimelineQuery(session: session.id, text: "before")).items == [.log(logs[2])])
            #expect(try await store.timeline(TimelineQuery(session: session.id, text: "items")).items == [.span(spans[0])])
            #expect(try await store.timeline(TimelineQuery(session: session.id, since: nanos(2))).items == Array(expected[3...]))

            // Positions: the offset of the page that starts with the item, among the matching items.
            for (offset, item) in expected.enumerated() {
                #expect(try await store.timelinePosition(kind: item.kind, id: item.id, query: TimelineQuery(session: session.id)) == offset)
            }
            let errorsOnly = TimelineQuery(session: session.id, kinds: [.log], minimumSeverity: .info)
            #expect(try await store.timelinePosition(kind: .log, id: logs[0].id, query: errorsOnly) == 1)
            #expect(try await store.timelinePosition(kind: .log, id: logs[1].id, query: errorsOnly) == nil, "filtered out")
            #expect(try await store.timelinePosition(kind: .state, id: s1.sequence, query: errorsOnly) == nil, "a kind not shown")
            #expect(try await store.timelinePosition(kind: .span, id: 999_999, query: TimelineQuery(session: session.id)) == nil)

            // The state the app was in at a log line or span: the newest recorded at or before it.
            #expect(try await store.state(before: logs[2].record.time, session: session.id) == nil)
            #expect(try await store.state(before: spans[1].span.start, session: session.id) == s1)
            #expect(try await store.state(before: logs[0].record.time, session: session.id) == s2, "a state at the same time counts")
            await #expect(throws: HistoryStoreError.noSuchSession(999_999)) { try await store.state(before: .now, session: 999_999) }
        }
    }

    @Test("traces are listed newest first with their root's name, duration, spans and errors; one is read by its id or a unique prefix")
    func traces() async throws {
        try await withStore { store, _ in
            let client = try await store.beginSession(peerID: "c", appName: "Client", kind: .parley, at: testTime(0))
            let server = try await store.beginSession(peerID: "s", appName: "Server", kind: .parley, at: testTime(0))
            let older = TraceID(hex: "aaaaaaaa000000000000000000000001")!
            let newer = TraceID(hex: "aaaaaaab000000000000000000000002")!
            let twin = TraceID(hex: "aaaaaaab000000000000000000000003")!
            let root = SpanID.random()
            let call = SpanID.random()
            _ = try await store.appendTelemetry(
                TelemetryBatch(spans: [
                    span(10.2, duration: 0.5, name: "SELECT", kind: .client, trace: newer, parent: call),
                    span(10, duration: 1, name: "GET /items", kind: .client, trace: newer, id: root),
                    span(1, duration: 0.25, name: "old", kind: .internal, trace: older),
                ]), to: client.id)
            _ = try await store.appendTelemetry(
                TelemetryBatch(spans: [
                    span(10.1, duration: 2, name: "GET /items (server)", kind: .server, trace: newer, id: call, parent: root,
                        status: .init(code: .error, message: "boom")),
                    span(5, name: "lonely", trace: twin),
                ]), to: server.id)

            let all = try await store.traces(limit: 10)
            #expect(all.map(\.traceID) == [newer, twin, older])
            #expect(all[0] == TraceSummary(
                traceID: newer, name: "GET /items", start: nanos(10), durationNanos: 2_100_000_000, spanCount: 3, errorCount: 1,
                sessions: [client.id, server.id]))
            #expect(try await store.traces(limit: 1).map(\.traceID) == [newer])
            #expect(try await store.traces(session: server.id, limit: 10).map(\.traceID) == [newer, twin])
            #expect(try await store.traces(app: "Client", limit: 10).map(\.traceID) == [newer, older])

            let spans = try await store.trace(newer.hex)
            #expect(spans.map(\.span.name) == ["GET /items", "GET /items (server)", "SELECT"])
            #expect(spans[1].span.status == .init(code: .error, message: "boom") && spans[1].session == server.id)
            #expect(spans[0].span.events == [.init(name: "retry", time: nanos(10.5), attributes: ["n": .int(1)])])
            #expect(try await store.trace("AAAAAAAA").map(\.span.name) == ["old"], "a prefix, in any case")
            await #expect(throws: HistoryStoreError.ambiguousTrace("aaaaaaab", matches: [newer.hex, twin.hex])) { try await store.trace("aaaaaaab") }
            await #expect(throws: HistoryStoreError.noSuchTrace("bbbbbbbb")) { try await store.trace("bbbbbbbb") }
            await #expect(throws: HistoryStoreError.invalidTraceID("aaaa")) { try await store.trace("aaaa") }
            await #expect(throws: HistoryStoreError.invalidTraceID("zzzzzzzzzz")) { try await store.trace("zzzzzzzzzz") }

            let clientSpans = try await store.spans(session: client.id, kind: .client, limit: 1)
            #expect(clientSpans.items.map(\.span.name) == ["SELECT"] && clientSpans.total == 2)
            let rest = try await store.spans(session: client.id, kind: .client, after: clientSpans.nextAfter, limit: 1)
            #expect(rest.items.map(\.span.name) == ["GET /items"] && rest.nextAfter == nil)
            #expect(try await store.span(rest.items[0].id) == rest.items[0])
            await #expect(throws: HistoryStoreError.noSuchSpan(999_999)) { try await store.span(999_999) }
        }
    }

    @Test("log records and spans count as entries and bytes against the limits; the oldest of all kinds go first, never what was just stored")
    func retention() async throws {
        try await withStore(limits: RetentionLimits(maxEntries: 6, maxBytes: 1 << 30)) { store, _ in
            let session = try await store.beginSession(peerID: "p", appName: "App", kind: .parley, at: testTime(0))
            let state = try await store.append(record("one", "{}"), to: session.id, at: testTime(1))
            let first = try await store.appendTelemetry(TelemetryBatch(logs: [log(1), log(2)], spans: [span(1)]), to: session.id, at: testTime(2))
            let totals = try await store.totals()
            #expect(totals.entries == 4)
            let bytesBefore = totals.bytes
            let second = try await store.appendTelemetry(TelemetryBatch(logs: [log(3), log(4)]), to: session.id, at: testTime(3))
            #expect(try await store.totals().entries == 6)
            #expect(try await store.totals().bytes > bytesBefore, "log records count bytes too")
            // Over by two: the state (received first), then the first batch's first log record.
            let third = try await store.appendTelemetry(TelemetryBatch(spans: [span(5), span(6)]), to: session.id, at: testTime(4))
            #expect(try await store.entries(EntryQuery(session: session.id)).items.isEmpty)
            await #expect(throws: HistoryStoreError.noSuchEntry(state.sequence)) { try await store.entry(state.sequence) }
            let logs = try await store.logs(LogQuery(session: session.id)).items.map(\.id)
            #expect(logs == [first.logs[1].id] + second.logs.map(\.id))
            let spans = try await store.spans(session: session.id, limit: 10).items.map(\.id)
            #expect(spans == first.spans.map(\.id) + third.spans.map(\.id))
            #expect(try await store.totals().entries == 6)
            #expect(try await store.session(session.id).logCount == 3)
            #expect(try await store.session(session.id).spanCount == 3)
            #expect(try await store.traces(limit: 10).map(\.spanCount).reduce(0, +) == 3, "the summaries count what is left")

            // A batch larger than the limit itself is kept whole; everything older goes.
            let big = try await store.appendTelemetry(TelemetryBatch(logs: (0..<8).map { log(10 + Double($0)) }), to: session.id, at: testTime(5))
            #expect(try await store.logs(LogQuery(session: session.id)).items.map(\.id) == big.logs.map(\.id))
            #expect(try await store.spans(session: session.id, limit: 10).items.isEmpty)
            #expect(try await store.traces(limit: 10).isEmpty, "spans the limits removed take their traces' summaries with them")
            #expect(try await store.totals().entries == 8)
        }
        // Bytes: long messages fill the byte limit first.
        try await withStore(limits: RetentionLimits(maxEntries: 1000, maxBytes: 20_000)) { store, _ in
            let session = try await store.beginSession(peerID: "p", appName: "App", kind: .parley, at: testTime(0))
            let long = String(repeating: "x", count: 4000)
            for index in 0..<6 {
                _ = try await store.appendTelemetry(TelemetryBatch(logs: [log(Double(index), .info, long)]), to: session.id, at: testTime(Double(index)))
            }
            let kept = try await store.logs(LogQuery(session: session.id)).items
            #expect(kept.count == 2, "each counts its message twice (with the full-text index): about 8 KB")
            #expect(try await store.totals().bytes <= 20_000)
        }
    }

    @Test("a session that recorded only log records or spans is kept when it ends and after a crash; deleting it deletes them")
    func telemetryOnlySessions() async throws {
        try await withTemporaryDirectory { directory in
            let store = try await HistoryStore.open(directory: directory)
            let logsOnly = try await store.beginSession(peerID: "l", appName: "Logger", kind: .parley, at: testTime(0))
            let spansOnly = try await store.beginSession(peerID: "s", appName: "Tracer", kind: .parley, at: testTime(0))
            let empty = try await store.beginSession(peerID: "e", appName: "Quiet", kind: .parley, at: testTime(0))
            _ = try await store.appendTelemetry(TelemetryBatch(logs: [log(1)]), to: logsOnly.id, at: testTime(5))
            _ = try await store.appendTelemetry(TelemetryBatch(spans: [span(1)]), to: spansOnly.id, at: testTime(7))
            #expect(try await store.endSession(logsOnly.id, at: testTime(9)) == false)
            #expect(try await store.endSession(empty.id) == true, "a session with nothing at all is removed")
            // parleyd stops without ending the span-only session (a crash): the next open ends it at its last record.
            try await store.close()
            let reopened = try await HistoryStore.open(directory: directory)
            let sessions = try await reopened.sessions()
            #expect(sessions.map(\.appName) == ["Logger", "Tracer"])
            #expect(sessions[1].ended == testTime(7) && sessions[1].spanCount == 1 && sessions[1].entryCount == 0)
            #expect(sessions[0].logCount == 1)
            await #expect(throws: HistoryStoreError.sessionEnded(spansOnly.id)) {
                try await reopened.appendTelemetry(TelemetryBatch(logs: [log(1)]), to: spansOnly.id)
            }
            try await reopened.deleteSession(logsOnly.id)
            try await reopened.deleteSession(spansOnly.id)
            #expect(try await reopened.logs(LogQuery()).items.isEmpty)
            #expect(try await reopened.traces(limit: 10).isEmpty)
            let totals = try await reopened.totals()
            #expect(totals.entries == 0 && totals.bytes == 0)
            try await reopened.close()
        }
    }

    @Test("a session's export carries its log records and spans (version 2); import restores them exactly, whole or in pieces")
    func exportImport() async throws {
        try await withStore { store, _ in
            let session = try await store.beginSession(peerID: "p", appName: "Listr", kind: .parley, at: testTime(0))
            let state = try await store.append(record("add", #"{"n":1}"#), to: session.id, at: testTime(1))
            let logs = [
                log(1.5, .warning, label: "listr.store", "line one\nline \u{1B}[31mtwo\u{2028}", metadata: ["path": .string("/a/b"), "deep": .map(["x": .double(0.5)])],
                    trace: .random()),
                log(2, .trace, label: "", "plain"),
            ]
            let spans = [span(1, status: .init(code: .error, message: "boom"), attributes: ["http.request.method": .string("GET")]), span(3, kind: .server)]
            let stored = try await store.appendTelemetry(TelemetryBatch(logs: logs, spans: spans), to: session.id, at: testTime(4))
            try await store.endSession(session.id, at: testTime(5))

            let file = try await store.export(session: session.id)
            let lines = String(buffer: file).split(separator: "\n")
            #expect(lines.count == 6, "the header, the entry, two log records, two spans")
            #expect(lines[0].hasPrefix(#"{"format":"parley-debugger-history","version":2,"#) && lines[0].hasSuffix(#","entries":1,"logs":2,"spans":2}"#))
            #expect(lines[2].hasPrefix(#"{"log":{"# ) && lines[2].hasSuffix(#","received":"2027-01-15T08:00:04.000Z"}"#))
            #expect(lines[4].hasPrefix(#"{"span":{"#))

            let imported = try await store.importSession(file)
            #expect(imported.entryCount == 1 && imported.logCount == 2 && imported.spanCount == 2)
            let copies = try await store.logs(LogQuery(session: imported.id)).items
            #expect(copies.map(\.record) == stored.logs.map(\.record))
            let spanCopies = try await store.spans(session: imported.id, limit: 10).items
            #expect(spanCopies.map(\.span) == stored.spans.map(\.span))
            #expect(try await store.entries(EntryQuery(session: imported.id)).items.map(\.action) == [state.action])
            // Exported again, the copy gives the same lines but for the entry's number.
            let again = String(buffer: try await store.export(session: imported.id)).split(separator: "\n")
            #expect(Array(again[2...]) == Array(lines[2...]))

            // In pieces, as the control socket and the web import it; a piece boundary between the kinds.
            try await store.deleteSession(imported.id)
            let pieces = HistoryImport.pieces(of: file, maxBytes: 200)
            #expect(pieces.count > 3)
            var progress = try await store.beginImport(header: pieces[0])
            for piece in pieces.dropFirst() { try await store.continueImport(&progress, lines: piece) }
            let piecewise = try await store.finishImport(progress)
            #expect(piecewise.logCount == 2 && piecewise.spanCount == 2)
            #expect(try await store.logs(LogQuery(session: piecewise.id)).items.map(\.record) == logs)

            // Cut short: the header's counts say so, and nothing is kept.
            try await store.deleteSession(piecewise.id)
            let truncated = ByteBuffer(string: lines.dropLast().joined(separator: "\n") + "\n")
            await #expect(throws: HistoryStoreError.invalidImport(line: 6, problem: .recordCount(field: "span", announced: 2, found: 1))) {
                try await store.importSession(truncated)
            }
            try await Self.refusesBadRecord(store, header: String(lines[0]), entry: String(lines[1]))
            #expect(try await store.sessions().map(\.id) == [session.id])
        }
    }

    /// A record that breaks the rules names its line and what is wrong.
    private static func refusesBadRecord(_ store: HistoryStore, header: String, entry: String) async throws {
        let badLine = #"{"log":{"severity":"info","message":"x"},"received":"2027-01-15T08:00:04.000Z"}"#
        let bad = ByteBuffer(string: header + "\n" + entry + "\n" + badLine + "\n")
        do {
            _ = try await store.importSession(bad)
            Issue.record("a log record without a time was imported")
        } catch {
            guard case .invalidImport(let line, .invalidRecord(let field, let reason)) = error else {
                Issue.record("unexpected \(error)")
                return
            }
            #expect(line == 3 && field == "log")
            #expect(reason.contains("timeUnixNano"), "\(reason)")
        }
    }

    @Test("an export of a session without log records or spans is still version 1, and a version 1 file imports")
    func plainExportsStayVersionOne() async throws {
        try await withStore { store, _ in
            let file = ByteBuffer(
                string: #"{"format":"parley-debugger-history","version":1,"session":{"peerID":"p","appName":"Old","kind":"legacy","started":"2027-01-15T08:00:00.000Z","ended":null},"entries":1}"#
                    + "\n" + #"{"sequence":4,"time":"2027-01-15T08:00:01.000Z","action":"a","state":{"x":1},"screenshot":""}"# + "\n")
            let imported = try await store.importSession(file)
            #expect(imported.entryCount == 1 && imported.logCount == 0 && imported.kind == .original)
            let exported = String(buffer: try await store.export(session: imported.id))
            #expect(exported.hasPrefix(#"{"format":"parley-debugger-history","version":1,"#) && exported.contains(#""entries":1}"#))
            let future = ByteBuffer(string: #"{"format":"parley-debugger-history","version":3,"session":{},"entries":0}"# + "\n")
            await #expect(throws: HistoryStoreError.invalidImport(line: 1, problem: .unsupportedFormat("version 3; this parleyd reads versions 1 to 2"))) {
                try await store.importSession(future)
            }
        }
    }

    @Test("a timeline of 100 000 mixed items pages by position; a page at offset 90 000 is right (its time is printed)")
    func largeTimeline() async throws {
        try await withStore(limits: RetentionLimits(maxEntries: 1_000_000, maxBytes: 1 << 32)) { store, _ in
            let session = try await store.beginSession(peerID: "p", appName: "Big", kind: .parley, at: testTime(0))
            // 10 000 states, 80 000 log records and 10 000 spans, a tenth of a second apart in a repeating pattern.
            for block in 0..<100 {
                var logs: [LogRecord] = []
                var spans: [SpanRecord] = []
                for index in 0..<1000 {
                    let step = block * 1000 + index
                    let seconds = Double(step) / 10
                    switch step % 10 {
                    case 0: continue
                    case 9: spans.append(span(seconds, duration: 0.05))
                    default: logs.append(log(seconds, LogSeverity.allCases[step % 7], label: "big.\(step % 5)", "message number \(step)"))
                    }
                }
                _ = try await store.appendTelemetry(TelemetryBatch(logs: logs, spans: spans), to: session.id)
            }
            for step in stride(from: 0, to: 100_000, by: 10) {
                _ = try await store.append(record("step(\(step))", "{}"), to: session.id, at: testTime(Double(step) / 10))
            }
            let clock = ContinuousClock()
            var page: HistoryPage<TimelineItem>?
            let elapsed = try await clock.measure {
                page = try await store.timeline(TimelineQuery(session: session.id, offset: 90_000, limit: 200))
            }
            print("timeline of 100 000 items: a page of 200 at offset 90 000 in \(elapsed.components.attoseconds / 1_000_000_000_000_000 + elapsed.components.seconds * 1000) ms")
            let items = try #require(page).items
            #expect(page?.total == 100_000)
            #expect(items.count == 200)
            #expect(items.first?.time == nanos(9000) && items.first?.kind == .state)
            #expect(items.map(\.time) == items.map(\.time).sorted())
            let filtered = try await clock.measure {
                page = try await store.timeline(TimelineQuery(session: session.id, minimumSeverity: .error, text: "message", offset: 20_000, limit: 200))
            }
            print("timeline of 100 000 items, errors with a word, offset 20 000: \(filtered.components.attoseconds / 1_000_000_000_000_000 + filtered.components.seconds * 1000) ms")
            #expect(page?.items.count == 200)
        }
    }
}
