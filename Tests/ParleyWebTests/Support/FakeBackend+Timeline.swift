import Foundation
import ParleyDebugger
import ParleyTelemetry
import ParleyWeb

/// Session 1's timeline in the fake: its three states (at 10, 11 and 12 s after ``FakeBackend/started``), three log
/// records and one trace of two spans, merged by time:
///
///     9.0 s   log 3    debug    app        starting
///     10.0 s  state 10
///     10.2 s  span 1   GET /items (server, ok), root of trace 4bf9…
///     10.3 s  span 2   db.query (client, error "timeout"), child of span 1, one event
///     10.5 s  log 1    info     app.net    GET /items        (at …500000123 ns: exact past 2^53)
///     11.0 s  state 11
///     11.5 s  log 2    warning  app.store  slow write
///     12.0 s  state 12
extension FakeBackend {
    static let startedNanos: UInt64 = 1_764_000_000 * 1_000_000_000
    static func at(_ seconds: Double, plus nanos: UInt64 = 0) -> UnixNanos { UnixNanos(startedNanos + UInt64(seconds * 1000) * 1_000_000 + nanos) }

    static let traceID = TraceID(hex: "4bf92f3577b34da6a3ce929d0e0e4736")!
    static let rootSpanID = SpanID(hex: "00f067aa0ba902b7")!
    static let childSpanID = SpanID(hex: "00f067aa0ba902b8")!

    static let logs: [StoredLogRecord] = [
        StoredLogRecord(id: 1, session: 1, record: LogRecord(
            time: at(10.5, plus: 123), severity: .info, label: "app.net", message: "GET /items", metadata: ["status": .int(200)],
            source: "App", file: "App/Net.swift", function: "load()", line: 42, traceID: traceID, spanID: rootSpanID)),
        StoredLogRecord(id: 2, session: 1, record: LogRecord(
            time: at(11.5), severity: .warning, label: "app.store", message: "slow write", metadata: ["ms": .int(812), "authorization": .string("[redacted]")])),
        StoredLogRecord(id: 3, session: 1, record: LogRecord(time: at(9), severity: .debug, label: "app", message: "starting")),
    ]

    static let spans: [StoredSpan] = [
        StoredSpan(id: 1, session: 1, span: SpanRecord(
            traceID: traceID, spanID: rootSpanID, name: "GET /items", kind: .server, start: at(10.2), end: at(10.8), status: .init(code: .ok),
            attributes: ["http.method": .string("GET"), "http.status_code": .int(200)])),
        StoredSpan(id: 2, session: 1, span: SpanRecord(
            traceID: traceID, spanID: childSpanID, parentSpanID: rootSpanID, name: "db.query", kind: .client, start: at(10.3), end: at(10.6),
            status: .init(code: .error, message: "timeout"), events: [.init(name: "retry", time: at(10.4), attributes: ["attempt": .int(2)])])),
    ]

    /// Session 1's items in time order.
    var timelineItems: [TimelineItem] {
        let states = [Int64(10), 11, 12].map { TimelineItem.state(summary(of: $0)) }
        return (states + Self.logs.map(TimelineItem.log) + Self.spans.map(TimelineItem.span)).sorted { Self.nanos($0) < Self.nanos($1) }
    }

    static func nanos(_ item: TimelineItem) -> UInt64 {
        if case .state(let entry) = item { return UInt64((entry.time.timeIntervalSince1970 * 1000).rounded()) * 1_000_000 }
        return item.time.value
    }

    func selected(_ item: TimelineItem, by query: TimelineQuery) -> Bool {
        if !query.kinds.isEmpty && !query.kinds.contains(item.kind) { return false }
        if let since = query.since, Self.nanos(item) < since.value { return false }
        switch item {
        case .state(let entry):
            if let text = query.text, !entry.action.contains(text) { return false }
        case .log(let log):
            if let minimum = query.minimumSeverity, log.record.severity < minimum { return false }
            if let label = query.label, !Self.glob(label, matches: log.record.label) { return false }
            if let text = query.text, !log.record.message.contains(text) { return false }
        case .span(let span):
            if let label = query.label, !Self.glob(label, matches: span.span.name) { return false }
            if let text = query.text, !span.span.name.contains(text) { return false }
        }
        return true
    }

    /// `*` any run, `?` one character: enough for the tests' patterns.
    static func glob(_ pattern: String, matches text: String) -> Bool {
        func match(_ p: Substring, _ t: Substring) -> Bool {
            guard let first = p.first else { return t.isEmpty }
            switch first {
            case "*": return match(p.dropFirst(), t) || (!t.isEmpty && match(p, t.dropFirst()))
            case "?": return !t.isEmpty && match(p.dropFirst(), t.dropFirst())
            default: return t.first == first && match(p.dropFirst(), t.dropFirst())
            }
        }
        return match(pattern[...], text[...])
    }

    func timeline(_ query: TimelineQuery) async throws -> HistoryPage<TimelineItem> {
        _ = try await session(query.session)
        changes.withLock { $0.lastTimelineQuery = query }
        let all = query.session == 1 ? timelineItems.filter { selected($0, by: query) } : []
        return HistoryPage(items: Array(all.dropFirst(query.offset).prefix(query.limit)), total: all.count, nextAfter: nil)
    }

    func timelinePosition(kind: TimelineItem.Kind, id: Int64, query: TimelineQuery) async throws -> (offset: Int, matches: Bool)? {
        _ = try await session(query.session)
        let items = query.session == 1 ? timelineItems : []
        guard let index = items.firstIndex(where: { $0.kind == kind && $0.id == id }) else { return nil }
        return (items[..<index].filter { selected($0, by: query) }.count, selected(items[index], by: query))
    }

    func logRecord(_ id: Int64) async throws -> StoredLogRecord {
        guard let log = Self.logs.first(where: { $0.id == id }) else { throw Failure.noSuchLogRecord }
        return log
    }

    func span(_ id: Int64) async throws -> StoredSpan {
        guard let span = Self.spans.first(where: { $0.id == id }) else { throw Failure.noSuchSpan }
        return span
    }

    func traces(session: Int64?, limit: Int) async throws -> [TraceSummary] {
        guard session == nil || session == 1 else { return [] }
        let summary = TraceSummary(
            traceID: Self.traceID, name: "GET /items", start: Self.at(10.2), durationNanos: 600_000_000, spanCount: 2, errorCount: 1, sessions: [1])
        return Array([summary].prefix(limit))
    }

    func trace(_ idOrPrefix: String) async throws -> [StoredSpan] {
        guard !idOrPrefix.isEmpty, Self.traceID.hex.hasPrefix(idOrPrefix.lowercased()) else { throw Failure.noSuchTrace }
        return Self.spans
    }

    func state(before time: UnixNanos, session: Int64) async throws -> EntrySummary? {
        _ = try await self.session(session)
        guard session == 1 else { return nil }
        return [Int64(12), 11, 10].map(summary(of:)).first { Self.nanos(.state($0)) <= time.value }
    }
}
