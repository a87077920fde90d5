import Foundation
import GRDB
import ParleyDebugger
import ParleyJSON
import ParleyTelemetry

/// One session's states, log records and spans on one timeline.
///
/// Each kind is one `SELECT kind, id, time` over its own table, filtered there; the timeline is their `UNION ALL`
/// ordered by time, kind, id. Every arm walks an index in time order (`entry_by_session_nanos`,
/// `logRecord_by_session_time`, `span_by_session_start`), so SQLite merges them rather than sorting the session,
/// and a page deep in a long session costs a walk over the index entries before it, not a sort of all of them.
///
/// SQLite merges in that index order only when asked for the time alone (asked for time, kind, id, it sorts each
/// run of equal times again, which took three times as long at offset 90 000 of 100 000 items). So a page is found by
/// time first, and then made exact: the items before it are counted (those earlier than its first time), and the
/// items of its span of times are read and put in the full order. Every position holds the same time in both
/// orders, so this is the page the full order gives.
extension HistoryStore {
    /// A page of `query.session`'s timeline: states at the time they were recorded, log records at their time,
    /// spans at their start; on equal times states first, then log records, then spans, each by id. Paged by
    /// position (`offset`, `limit`); `total` counts the matching items, and `nextAfter` is nil.
    public func timeline(_ query: TimelineQuery) async throws(HistoryStoreError) -> HistoryPage<TimelineItem> {
        let arms = try TimelineArm.arms(for: query)
        let union = arms.map(\.sql).joined(separator: " UNION ALL ")
        let unionArguments = arms.reduce(StatementArguments()) { $0 + $1.arguments }
        let (session, offset, limit) = (query.session, max(0, query.offset), max(0, query.limit))
        return try await read("list the timeline") { db in
            try Self.requireSession(session, in: db)
            var total = 0
            for arm in arms {
                total += try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM (\(arm.sql))", arguments: arm.arguments) ?? 0
            }
            guard !arms.isEmpty, limit > 0 else { return HistoryPage(items: [], total: total, nextAfter: nil) }
            let times = try Int64.fetchAll(db, sql: "SELECT t FROM (\(union) ORDER BY t LIMIT ? OFFSET ?)", arguments: unionArguments + [limit, offset])
            guard let first = times.first, let last = times.last else { return HistoryPage(items: [], total: total, nextAfter: nil) }
            var before = 0
            var span: [(kind: Int, id: Int64, time: Int64)] = []
            for arm in arms {
                before += try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM (\(arm.sql)) WHERE t < ?", arguments: arm.arguments + [first]) ?? 0
                span += try Row.fetchAll(db, sql: "SELECT k, id, t FROM (\(arm.sql)) WHERE t >= ? AND t <= ?", arguments: arm.arguments + [first, last])
                    .map { (kind: $0["k"], id: $0["id"], time: $0["t"]) }
            }
            span.sort { ($0.time, $0.kind, $0.id) < ($1.time, $1.kind, $1.id) }
            let keys = span.dropFirst(offset - before).prefix(limit).map { (kind: $0.kind, id: $0.id) }
            let items = try Self.items(Array(keys), in: db)
            return HistoryPage(items: items, total: total, nextAfter: nil)
        }
    }

    /// Where an item is on `query`'s timeline: how many matching items come before it (the `offset` of the page
    /// that starts with it). Nil when it is not in the query's session or does not pass the query's filters.
    public func timelinePosition(kind: TimelineItem.Kind, id: Int64, query: TimelineQuery) async throws(HistoryStoreError) -> Int? {
        let arms = try TimelineArm.arms(for: query)
        let session = query.session
        return try await read("find an item on the timeline") { db -> Int? in
            try Self.requireSession(session, in: db)
            guard let own = arms.first(where: { $0.kind == kind }),
                let time = try Int64.fetchOne(db, sql: "SELECT t FROM (\(own.sql)) WHERE id = ?", arguments: own.arguments + [id])
            else { return nil }
            var before = 0
            for arm in arms {
                // On equal times the kinds come in their order, then ids: which of the arm's items at `time` are before.
                let condition: String
                var arguments = arm.arguments + [time]
                if arm.order < own.order {
                    condition = "t <= ?"
                } else if arm.order > own.order {
                    condition = "t < ?"
                } else {
                    condition = "(t < ? OR (t = ? AND id < ?))"
                    arguments += [time, id]
                }
                before += try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM (\(arm.sql)) WHERE \(condition)", arguments: arguments) ?? 0
            }
            return before
        }
    }

    /// The newest state of `session` recorded at or before `time` (what the app showed when a log line was written
    /// or a span began); nil when the session has none that early.
    public func state(before time: UnixNanos, session: Int64) async throws(HistoryStoreError) -> EntrySummary? {
        let nanos = TelemetryRows.nanos(time)
        return try await read("find the state at a time") { db in
            try Self.requireSession(session, in: db)
            return try EntryRecord.fetchOne(
                db,
                sql: "SELECT * FROM entry WHERE session = ? AND time * 1000000 <= ? ORDER BY time * 1000000 DESC, sequence DESC LIMIT 1",
                arguments: [session, nanos]
            )?.summary
        }
    }

    /// The items of `keys` (kind order, id), read from their tables, in the order given.
    private static func items(_ keys: [(kind: Int, id: Int64)], in db: Database) throws -> [TimelineItem] {
        func ids(_ kind: TimelineItem.Kind) -> [Int64] { keys.filter { $0.kind == TimelineArm.order(of: kind) }.map(\.id) }
        func list(_ ids: [Int64]) -> String { ids.map(String.init).joined(separator: ",") }
        let decoder = JSONValueDecoder()
        var states: [Int64: EntrySummary] = [:]
        var logs: [Int64: StoredLogRecord] = [:]
        var spans: [Int64: StoredSpan] = [:]
        let stateIDs = ids(.state)
        if !stateIDs.isEmpty {
            for record in try EntryRecord.fetchAll(db, sql: "SELECT * FROM entry WHERE sequence IN (\(list(stateIDs)))") {
                states[record.sequence ?? 0] = record.summary
            }
        }
        let logIDs = ids(.log)
        if !logIDs.isEmpty {
            for row in try Row.fetchAll(db, sql: "SELECT \(TelemetryRows.logColumns) FROM logRecord WHERE id IN (\(list(logIDs)))") {
                let log = TelemetryRows.log(row, decoder)
                logs[log.id] = log
            }
        }
        let spanIDs = ids(.span)
        if !spanIDs.isEmpty {
            for row in try Row.fetchAll(db, sql: "SELECT \(TelemetryRows.spanColumns) FROM span WHERE id IN (\(list(spanIDs)))") {
                if let span = TelemetryRows.span(row, decoder) { spans[span.id] = span }
            }
        }
        return keys.compactMap { key -> TimelineItem? in
            switch key.kind {
            case TimelineArm.order(of: .state): states[key.id].map(TimelineItem.state)
            case TimelineArm.order(of: .log): logs[key.id].map(TimelineItem.log)
            default: spans[key.id].map(TimelineItem.span)
            }
        }
    }
}

/// One kind's part of a timeline query: `SELECT k, id, t` (kind order, id, time in nanoseconds) of the session's
/// items of that kind that pass the filters.
struct TimelineArm {
    var kind: TimelineItem.Kind
    var sql: String
    var arguments: StatementArguments

    var order: Int { Self.order(of: kind) }

    /// States, log records, spans: the order of kinds on equal times.
    static func order(of kind: TimelineItem.Kind) -> Int {
        switch kind {
        case .state: 0
        case .log: 1
        case .span: 2
        }
    }

    /// The arms of the kinds `query` shows, in kind order. The severity filter applies to log records only, the
    /// label pattern to log records' labels and spans' names; the text to log messages and span names (full text)
    /// and to states' actions (contained, ASCII letters in any case).
    static func arms(for query: TimelineQuery) throws(HistoryStoreError) -> [TimelineArm] {
        let kinds = query.kinds.isEmpty ? Set(TimelineItem.Kind.allCases) : query.kinds
        let since = query.since.map(TelemetryRows.nanos)
        var arms: [TimelineArm] = []
        if kinds.contains(.state) {
            var sql = "SELECT 0 AS k, sequence AS id, time * 1000000 AS t FROM entry WHERE session = ?"
            var arguments: StatementArguments = [query.session]
            if let since {
                sql += " AND time * 1000000 >= ?"
                arguments += [since]
            }
            if let text = query.text {
                sql += " AND " + TelemetrySQL.contains(text, column: "action", arguments: &arguments)
            }
            arms.append(TimelineArm(kind: .state, sql: sql, arguments: arguments))
        }
        if kinds.contains(.log) {
            var sql = "SELECT 1 AS k, id, time AS t FROM logRecord WHERE session = ?"
            var arguments: StatementArguments = [query.session]
            if let severity = query.minimumSeverity {
                sql += " AND " + TelemetrySQL.atLeast(severity, column: "severity", arguments: &arguments)
            }
            if let label = query.label {
                sql += " AND " + (try TelemetrySQL.glob(label, column: "label", arguments: &arguments))
            }
            if let since {
                sql += " AND time >= ?"
                arguments += [since]
            }
            if let text = query.text {
                sql += " AND " + TelemetrySQL.text(text, in: .logs, arguments: &arguments)
            }
            arms.append(TimelineArm(kind: .log, sql: sql, arguments: arguments))
        }
        if kinds.contains(.span) {
            var sql = "SELECT 2 AS k, id, start AS t FROM span WHERE session = ?"
            var arguments: StatementArguments = [query.session]
            if let label = query.label {
                sql += " AND " + (try TelemetrySQL.glob(label, column: "name", arguments: &arguments))
            }
            if let since {
                sql += " AND start >= ?"
                arguments += [since]
            }
            if let text = query.text {
                sql += " AND " + TelemetrySQL.text(text, in: .spans, arguments: &arguments)
            }
            arms.append(TimelineArm(kind: .span, sql: sql, arguments: arguments))
        }
        return arms
    }
}
