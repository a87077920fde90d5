import Foundation
import GRDB
import ParleyDebugger
import ParleyJSON
import ParleyTelemetry

/// An app's log records and spans, stored in its session beside its states.
extension HistoryStore {
    // MARK: - Storing

    /// Stores a batch of an app's log records and spans in its open session, then applies the retention limits
    /// (which never drop what this call stored). The records are stored as given: the caller has cut them to
    /// ``TelemetryLimits`` (parleyd does for every batch it receives). Returns them numbered, in the batch's order.
    /// When it throws, nothing of the batch was stored.
    public func appendTelemetry(
        _ batch: TelemetryBatch, to session: Int64, at received: Date = Date()
    ) async throws(HistoryStoreError) -> TelemetryAppend.Stored {
        try await enqueueTelemetry(batch, to: session, at: received).stored()
    }

    /// Hands a batch to the store and returns at once: batches are stored in the order they are enqueued, several
    /// to a transaction while the writer is busy (``TelemetryCommits``), each as ``appendTelemetry(_:to:at:)``
    /// says. A caller that must keep an app's batches in order enqueues them in that order, and may go on decoding
    /// its next batch while this one waits.
    public func enqueueTelemetry(_ batch: TelemetryBatch, to session: Int64, at received: Date = Date()) -> TelemetryAppend {
        let append = TelemetryAppend(batch: batch, session: session, receivedMilliseconds: Timestamp(received).milliseconds)
        guard !batch.isEmpty else { return append }
        telemetryCommits.withLock { commits in
            guard commits.add(append) else { return }
            // Detached: the loop stores every app's batches, not the work of whichever caller happened to start it.
            // Kept under the same lock that started it, so that close() never waits for an older one instead.
            commits.writer = Task.detached { [self] in await storeWaitingTelemetry() }
        }
        return append
    }

    /// Stores what waits, a transaction at a time, until nothing does.
    private func storeWaitingTelemetry() async {
        while true {
            let group = telemetryCommits.withLock { $0.next() }
            guard !group.isEmpty else { return }
            await store(group)
        }
    }

    /// Stores batches in one transaction. A batch whose session is not open is refused alone. When SQLite refuses a
    /// batch's rows, nothing of the transaction is kept, and each batch is stored again in a transaction of its own,
    /// so that only that batch is refused. (A savepoint per batch would keep the others at once, but made SQLite copy
    /// every page a batch touched to its statement journal: a fifth of the rate.)
    func store(_ group: [TelemetryAppend]) async {
        let limits = self.limits
        typealias Outcome = Result<TelemetryAppend.IDs, HistoryStoreError>
        let stored: Result<(outcomes: [Outcome], dropped: Int), HistoryStoreError>
        do {
            stored = .success(try await write("store log records and spans") { db -> (outcomes: [Outcome], dropped: Int) in
                let encoder = TelemetryRows.encoder()
                var kept = Kept()
                var outcomes: [Outcome] = []
                for append in group {
                    do {
                        try Self.requireOpenSession(append.session, in: db)
                    } catch let refused as HistoryStoreError {
                        outcomes.append(.failure(refused))
                        continue
                    }
                    let received = append.receivedMilliseconds
                    let logIDs = try TelemetryRows.insert(
                        logs: append.batch.logs.lazy.map { ($0, received) }, session: append.session, encoder: encoder, in: db)
                    let spanIDs = try TelemetryRows.insert(
                        spans: append.batch.spans.lazy.map { ($0, received) }, session: append.session, encoder: encoder, in: db)
                    kept.log = kept.log ?? logIDs.first
                    kept.span = kept.span ?? spanIDs.first
                    outcomes.append(.success((logIDs, spanIDs)))
                }
                return (outcomes, try Self.enforce(limits, keeping: kept, in: db))
            })
        } catch {
            if group.count > 1 {
                for append in group { await store([append]) }
                return
            }
            stored = .failure(error)
        }
        for (index, append) in group.enumerated() {
            append.finish(stored.flatMap { $0.outcomes[index] })
        }
        if case .success(let stored) = stored, stored.dropped > 0 {
            logger.debug("history retention dropped entries", metadata: ["dropped-entries": "\(stored.dropped)"])
            await giveBackFreePages()
        }
    }

    // MARK: - Log records

    /// Log records through `query`'s filters, oldest (lowest id) first.
    public func logs(_ query: LogQuery) async throws(HistoryStoreError) -> HistoryPage<StoredLogRecord> {
        var conditions = [TelemetrySQL.notImporting("logRecord.session")]
        var arguments = StatementArguments()
        if let session = query.session {
            conditions.append("logRecord.session = ?")
            arguments += [session]
        }
        if let app = query.app {
            conditions.append("logRecord.session IN \(TelemetrySQL.sessions(ofApp: app, arguments: &arguments))")
        }
        if let severity = query.minimumSeverity {
            conditions.append(TelemetrySQL.atLeast(severity, column: "logRecord.severity", arguments: &arguments))
        }
        if let label = query.label {
            conditions.append(try TelemetrySQL.glob(label, column: "logRecord.label", arguments: &arguments))
        }
        if let text = query.text {
            conditions.append(TelemetrySQL.text(text, in: .logs, arguments: &arguments))
        }
        if let since = query.since {
            conditions.append("logRecord.time >= ?")
            arguments += [TelemetryRows.nanos(since)]
        }
        let matching = conditions.joined(separator: " AND ")
        let matchingArguments = arguments
        let (session, after, last, limit) = (query.session, query.after, query.last, max(0, query.limit))
        return try await read("list log records") { db in
            if let session { try Self.requireSession(session, in: db) }
            let total = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM logRecord WHERE \(matching)", arguments: matchingArguments) ?? 0
            var page = matching
            var pageArguments = matchingArguments
            if let last {
                // The oldest of the newest `last`: where the page starts.
                if let first = try Int64.fetchOne(
                    db, sql: "SELECT id FROM logRecord WHERE \(matching) ORDER BY id DESC LIMIT 1 OFFSET ?",
                    arguments: matchingArguments + [max(0, last - 1)])
                {
                    page += " AND logRecord.id >= ?"
                    pageArguments += [first]
                }
            }
            if let after {
                page += " AND logRecord.id > ?"
                pageArguments += [after]
            }
            let decoder = JSONValueDecoder()
            var items = try Row.fetchAll(
                db, sql: "SELECT \(TelemetryRows.logColumns) FROM logRecord WHERE \(page) ORDER BY id LIMIT ?", arguments: pageArguments + [limit + 1]
            ).map { TelemetryRows.log($0, decoder) }
            let more = items.count > limit
            if more { items.removeLast() }
            return HistoryPage(items: items, total: total, nextAfter: more ? items.last?.id : nil)
        }
    }

    /// The newest log record's id, nil when there is none.
    public func newestLogID() async throws(HistoryStoreError) -> Int64? {
        try await read("find the newest log record") { db in try Int64.fetchOne(db, sql: "SELECT MAX(id) FROM logRecord") }
    }

    public func logRecord(_ id: Int64) async throws(HistoryStoreError) -> StoredLogRecord {
        let found = try await read("read a log record") { db -> StoredLogRecord? in
            try Row.fetchOne(
                db,
                sql: "SELECT \(TelemetryRows.logColumns) FROM logRecord WHERE id = ? AND \(TelemetrySQL.notImporting())",
                arguments: [id]
            ).map { TelemetryRows.log($0, JSONValueDecoder()) }
        }
        guard let found else { throw .noSuchLogRecord(id) }
        return found
    }

    // MARK: - Spans and traces

    public func span(_ id: Int64) async throws(HistoryStoreError) -> StoredSpan {
        let found = try await read("read a span") { db -> StoredSpan? in
            try Row.fetchOne(
                db, sql: "SELECT \(TelemetryRows.spanColumns) FROM span WHERE id = ? AND \(TelemetrySQL.notImporting())",
                arguments: [id]
            ).flatMap { TelemetryRows.span($0, JSONValueDecoder()) }
        }
        guard let found else { throw .noSuchSpan(id) }
        return found
    }

    /// One session's spans (of one kind when given), oldest (lowest id) first.
    public func spans(session: Int64, kind: SpanRecord.Kind? = nil, after: Int64? = nil, limit: Int) async throws(HistoryStoreError) -> HistoryPage<StoredSpan> {
        var matching = "session = ?"
        var arguments: StatementArguments = [session]
        if let kind {
            matching += " AND kind = ?"
            arguments += [kind.rawValue]
        }
        let (condition, matchingArguments) = (matching, arguments)
        let limit = max(0, limit)
        return try await read("list spans") { db in
            try Self.requireSession(session, in: db)
            let total = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM span WHERE \(condition)", arguments: matchingArguments) ?? 0
            let decoder = JSONValueDecoder()
            var items = try Row.fetchAll(
                db, sql: "SELECT \(TelemetryRows.spanColumns) FROM span WHERE \(condition) AND id > ? ORDER BY id LIMIT ?",
                arguments: matchingArguments + [after ?? Int64.min, limit + 1]
            ).compactMap { TelemetryRows.span($0, decoder) }
            let more = items.count > limit
            if more { items.removeLast() }
            return HistoryPage(items: items, total: total, nextAfter: more ? items.last?.id : nil)
        }
    }

    /// The newest traces, newest first: those with a span in `session`, or in a session of `app`
    /// (``LogQuery/app``), or all. They are chosen by their first span's start in each chosen session (from the
    /// summaries), and listed by their first span's start in any session; each counts the trace's spans from
    /// every session.
    public func traces(session: Int64? = nil, app: String? = nil, limit: Int) async throws(HistoryStoreError) -> [TraceSummary] {
        var conditions = [TelemetrySQL.notImporting()]
        var arguments = StatementArguments()
        if let session {
            conditions.append("session = ?")
            arguments += [session]
        }
        if let app {
            conditions.append("session IN \(TelemetrySQL.sessions(ofApp: app, arguments: &arguments))")
        }
        let (chosen, chosenArguments) = (conditions.joined(separator: " AND "), arguments)
        let limit = max(0, limit)
        return try await read("list traces") { db in
            if let session { try Self.requireSession(session, in: db) }
            // Newest summary rows first, through the start index, until `limit` traces: a trace with spans in
            // several sessions has a row in each.
            var traceIDs: [String] = []
            var seen: Set<String> = []
            let rows = try String.fetchCursor(
                db, sql: "SELECT traceID FROM traceSummary WHERE \(chosen) ORDER BY start DESC", arguments: chosenArguments)
            while traceIDs.count < limit, let traceID = try rows.next() {
                if seen.insert(traceID).inserted { traceIDs.append(traceID) }
            }
            guard !traceIDs.isEmpty else { return [] }
            let placeholders = Array(repeating: "?", count: traceIDs.count).joined(separator: ", ")
            let summaries = try Row.fetchAll(
                db,
                sql: """
                    SELECT t.traceID, MIN(t.start) AS start, MAX(t.end) AS end, SUM(t.spans) AS spans, SUM(t.errors) AS errors,
                           GROUP_CONCAT(t.session) AS sessions,
                           COALESCE(
                               (SELECT name FROM span r WHERE r.traceID = t.traceID AND r.parentSpanID IS NULL AND \(TelemetrySQL.notImporting("r.session"))
                                ORDER BY r.start, r.id LIMIT 1),
                               (SELECT name FROM span r WHERE r.traceID = t.traceID AND \(TelemetrySQL.notImporting("r.session")) ORDER BY r.start, r.id LIMIT 1)) AS name
                    FROM traceSummary t
                    WHERE t.traceID IN (\(placeholders)) AND \(TelemetrySQL.notImporting("t.session"))
                    GROUP BY t.traceID ORDER BY start DESC, t.traceID
                    """,
                arguments: StatementArguments(traceIDs)
            )
            return summaries.compactMap { row -> TraceSummary? in
                guard let traceID = TraceID(hex: row["traceID"]) else { return nil }
                let start: Int64 = row["start"]
                let end: Int64 = row["end"]
                let sessions = (row["sessions"] as String? ?? "").split(separator: ",").compactMap { Int64($0) }.sorted()
                return TraceSummary(
                    traceID: traceID, name: row["name"] ?? "", start: UnixNanos(UInt64(max(0, start))),
                    durationNanos: UInt64(max(0, end - start)), spanCount: row["spans"], errorCount: row["errors"] ?? 0, sessions: sessions
                )
            }
        }
    }

    /// The stored spans of one trace, by start time. `idOrPrefix` is its id or a prefix of at least 8 hexadecimal
    /// digits that starts no other stored trace's id (``HistoryStoreError/ambiguousTrace(_:matches:)``).
    public func trace(_ idOrPrefix: String) async throws(HistoryStoreError) -> [StoredSpan] {
        let prefix = idOrPrefix.lowercased()
        guard (8...32).contains(prefix.utf8.count), prefix.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }) else {
            throw .invalidTraceID(idOrPrefix)
        }
        let notImporting = TelemetrySQL.notImporting()
        let spans = try await read("read a trace") { db -> [StoredSpan] in
            // Every hexadecimal digit sorts before "g": the prefix's range in the index.
            let ids = try String.fetchAll(
                db, sql: "SELECT DISTINCT traceID FROM span WHERE traceID >= ? AND traceID < ? AND \(notImporting) LIMIT 3",
                arguments: [prefix, prefix + "g"])
            guard let id = ids.first else { throw HistoryStoreError.noSuchTrace(idOrPrefix) }
            guard ids.count == 1 else { throw HistoryStoreError.ambiguousTrace(idOrPrefix, matches: ids) }
            let decoder = JSONValueDecoder()
            return try Row.fetchAll(
                db, sql: "SELECT \(TelemetryRows.spanColumns) FROM span WHERE traceID = ? AND \(notImporting) ORDER BY start, id", arguments: [id]
            ).compactMap { TelemetryRows.span($0, decoder) }
        }
        return spans
    }
}

/// SQL conditions shared by the listings of log records, spans and the timeline.
enum TelemetrySQL {
    /// `column` (a session id) is not a session still being imported: such rows are invisible until it commits.
    static func notImporting(_ column: String = "session") -> String {
        "\(column) NOT IN (SELECT id FROM session WHERE importing = 1)"
    }

    enum TextIndex {
        case logs, spans

        var table: String { self == .logs ? "logText" : "spanText" }
        var rowid: String { self == .logs ? "logRecord.id" : "span.id" }
        var column: String { self == .logs ? "logRecord.message" : "span.name" }
    }

    /// `(SELECT id FROM session WHERE …)`: the sessions of apps named `app`, or whose peer id starts with it.
    static func sessions(ofApp app: String, arguments: inout StatementArguments) -> String {
        let prefix = app.lowercased()
        arguments += [app, prefix, prefix, prefix]
        return "(SELECT id FROM session WHERE importing = 0 AND (appName = ? OR (? <> '' AND substr(peerID, 1, length(?)) = ?)))"
    }

    /// `column >= …` for a minimum level. From warnings up it also states the severity index's own condition,
    /// literally: SQLite uses a partial index only for a query that says its WHERE term.
    static func atLeast(_ severity: LogSeverity, column: String, arguments: inout StatementArguments) -> String {
        arguments += [severity.number]
        let indexed = HistorySchema.indexedSeverity
        return severity.number >= indexed ? "\(column) >= ? AND \(column) >= \(indexed)" : "\(column) >= ?"
    }

    /// `column GLOB …` for a label pattern (`*` any run, `?` one character, `\` takes the next one literally).
    static func glob(_ pattern: String, column: String, arguments: inout StatementArguments) throws(HistoryStoreError) -> String {
        let glob: ActionGlob
        do {
            glob = try ActionGlob(pattern)
        } catch {
            throw .invalidLabelPattern(error)
        }
        arguments += [ActionFilterSQL.globOperand(glob)]
        return "\(column) GLOB ?"
    }

    /// Records whose text contains `text`'s words in order, the last one as a prefix (`time` finds "timeout"), by
    /// the full-text index. A text without a letter or digit has no words to look up; it is then found as it is,
    /// in any case.
    static func text(_ text: String, in index: TextIndex, arguments: inout StatementArguments) -> String {
        if text.unicodeScalars.contains(where: { $0.properties.isAlphabetic || $0.properties.numericType != nil }) {
            arguments += ["\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\" *"]
            return "\(index.rowid) IN (SELECT rowid FROM \(index.table) WHERE \(index.table) MATCH ?)"
        }
        arguments += [text]
        return "instr(lower(\(index.column)), lower(?)) > 0"
    }

    /// `column LIKE …` for the states' action text: contains `text`, ASCII letters in any case.
    static func contains(_ text: String, column: String, arguments: inout StatementArguments) -> String {
        var escaped = ""
        for character in text {
            if character == "%" || character == "_" || character == "\\" { escaped.append("\\") }
            escaped.append(character)
        }
        arguments += ["%" + escaped + "%"]
        return "\(column) LIKE ? ESCAPE '\\'"
    }
}
