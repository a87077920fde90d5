import Foundation
import GRDB
import ParleyDebugger
@testable import ParleyHistory
import ParleyTelemetry
import Testing

@Suite("History: databases written by earlier versions")
struct HistoryMigrationTests {
    /// A history as an earlier parleyd left it: the schema up to and including `version`, in the file parleyd opens.
    static func database(in directory: String, upTo version: String) throws -> DatabaseQueue {
        let older = try DatabaseQueue(path: URL(fileURLWithPath: directory).appendingPathComponent(HistoryStore.fileName).path)
        try HistorySchema.migrator.migrate(older, upTo: version)
        return older
    }

    @Test("log records stored while triggers indexed them row by row are still found by their words after the upgrade, beside new ones, and counted once")
    func perRowIndexingToPerBatch() async throws {
        try await withTemporaryDirectory { directory in
            let older = try Self.database(in: directory, upTo: "v6: the resource attributes of an OpenTelemetry session")
            try await older.write { db in
                try db.execute(sql: "INSERT INTO session (peerID, appName, kind, started, ended) VALUES ('a-1', 'Listr', 'parley', 0, NULL)")
                for (number, message) in ["saved the shopping list", "cannot reach the server"].enumerated() {
                    try db.execute(
                        sql: """
                            INSERT INTO logRecord (session, received, time, severity, label, message, metadata, source, file, function, line,
                                                   droppedMetadata, size)
                            VALUES (1, 0, ?, 9, 'listr', ?, '', '', '', '', 0, 0, 100)
                            """,
                        arguments: [number, message])
                }
            }
            try older.close()

            // Opening ends the session the older process left open; the app's next connection is a new one.
            let store = try await HistoryStore.open(directory: directory)
            let session = try await store.beginSession(peerID: "a-1", appName: "Listr", kind: .parley)
            let before = try await store.totals()
            let new = try await store.appendTelemetry(
                TelemetryBatch(logs: [LogRecord(time: UnixNanos(5), severity: .error, label: "", message: "server gone again", source: "")]),
                to: session.id)
            func messages(_ text: String) async throws -> [String] { try await store.logs(LogQuery(text: text)).items.map(\.record.message) }
            #expect(try await messages("shopping") == ["saved the shopping list"])
            #expect(try await messages("server") == ["cannot reach the server", "server gone again"])
            let after = try await store.totals()
            #expect(before.entries == 2 && after.entries == 3)
            #expect(after.bytes == before.bytes + Int64(TelemetryRows.size(of: new.logs[0].record, metadata: "")))
            // Empty texts are stored as empty, not as NULL: the record reads back as it was given.
            #expect(try await store.logRecord(new.logs[0].id).record == new.logs[0].record)
            try await store.close()
        }
    }

    @Test("spans stored before traces had summaries are listed after the upgrade, counted with the spans stored since, and leave with them")
    func traceSummariesFromEarlierSpans() async throws {
        try await withTemporaryDirectory { directory in
            let older = try Self.database(in: directory, upTo: "v7: log records and spans indexed and counted once per batch")
            let early = TraceID(hex: "0000000000000000000000000000000a")!
            let shared = TraceID(hex: "0000000000000000000000000000000b")!
            try await older.write { db in
                try db.execute(sql: "INSERT INTO session (peerID, appName, kind, started, ended) VALUES ('a-1', 'Listr', 'parley', 0, 1)")
                for (trace, name, start, status) in [(early, "GET /", 1, "unset"), (shared, "POST /items", 20, "error"), (shared, "INSERT", 21, "unset")] {
                    try db.execute(
                        sql: """
                            INSERT INTO span (session, received, traceID, spanID, parentSpanID, name, kind, start, end, statusCode, statusMessage,
                                              attributes, events, links, droppedAttributes, droppedEvents, droppedLinks, size)
                            VALUES (1, 0, ?, ?, NULL, ?, 'server', ?, ?, ?, NULL, '', '', '', 0, 0, 0, 100)
                            """,
                        arguments: [trace.hex, SpanID.random().hex, name, start, start + 5, status])
                }
                // As version 7 indexed its spans' names, once per batch.
                try db.execute(sql: "INSERT INTO spanText(spanText) VALUES ('rebuild')")
            }
            try older.close()

            let store = try await HistoryStore.open(directory: directory)
            let listed = try await store.traces(limit: 10)
            #expect(listed.map(\.traceID) == [shared, early])
            #expect(listed.map(\.spanCount) == [2, 1] && listed.map(\.errorCount) == [1, 0])
            #expect(listed[0].name == "POST /items" && listed[0].start == UnixNanos(20) && listed[0].durationNanos == 6)

            // A second session adds a span to the shared trace: one trace, counted from both.
            let session = try await store.beginSession(peerID: "b-2", appName: "Server", kind: .parley)
            _ = try await store.appendTelemetry(
                TelemetryBatch(spans: [SpanRecord(traceID: shared, spanID: .random(), name: "GET /late", kind: .server, start: UnixNanos(40), end: UnixNanos(50))]),
                to: session.id)
            let both = try await store.traces(limit: 10)
            #expect(both.map(\.traceID) == [shared, early])
            #expect(both[0].spanCount == 3 && both[0].durationNanos == 30 && both[0].sessions == [1, session.id])
            #expect(try await store.traces(session: session.id, limit: 10).map(\.traceID) == [shared])

            try await store.deleteSession(1)
            let left = try await store.traces(limit: 10)
            #expect(left.map(\.traceID) == [shared] && left[0].spanCount == 1 && left[0].errorCount == 0 && left[0].name == "GET /late")
            try await store.close()
        }
    }

    @Test("after the severity index narrows to warnings and above, every level filter finds what it did, and warnings and above are looked up through the index")
    func severityIndexOfWarnings() async throws {
        try await withTemporaryDirectory { directory in
            let older = try Self.database(in: directory, upTo: "v8: a summary row per trace and session")
            let levels: [LogSeverity] = [.trace, .debug, .info, .notice, .warning, .error, .critical]
            try await older.write { db in
                try db.execute(sql: "INSERT INTO session (peerID, appName, kind, started, ended) VALUES ('a-1', 'Listr', 'parley', 0, 1)")
                for (number, level) in levels.enumerated() {
                    try db.execute(
                        sql: """
                            INSERT INTO logRecord (session, received, time, severity, label, message, metadata, source, file, function, line,
                                                   droppedMetadata, size)
                            VALUES (1, 0, ?, ?, 'listr', ?, '', '', '', '', 0, 0, 100)
                            """,
                        arguments: [number, level.number, "\(level)"])
                }
            }
            try older.close()

            let store = try await HistoryStore.open(directory: directory)
            let session = try await store.beginSession(peerID: "b-2", appName: "Listr", kind: .parley)
            _ = try await store.appendTelemetry(
                TelemetryBatch(logs: levels.map { LogRecord(time: UnixNanos(100), severity: $0, label: "listr", message: "new \($0)", source: "") }),
                to: session.id)
            for (index, level) in levels.enumerated() {
                let found = try await store.logs(LogQuery(minimumSeverity: level)).items.map(\.record.message)
                let expected = levels[index...].map { "\($0)" } + levels[index...].map { "new \($0)" }
                #expect(found == expected, "at least \(level)")
                let timeline = try await store.timeline(TimelineQuery(session: session.id, kinds: [.log], minimumSeverity: level))
                #expect(timeline.items.count == levels.count - index, "timeline at least \(level)")
            }

            func plan(_ level: LogSeverity) async throws -> String {
                var arguments = StatementArguments()
                let condition = TelemetrySQL.atLeast(level, column: "logRecord.severity", arguments: &arguments)
                let bound = arguments
                return try await store.pool.read { db in
                    try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN SELECT id FROM logRecord WHERE \(condition)", arguments: bound)
                        .map { $0["detail"] as String }.joined(separator: "; ")
                }
            }
            #expect(HistorySchema.indexedSeverity == LogSeverity.warning.number)
            #expect(try await plan(.error).contains("logRecord_by_severity"))
            #expect(try await plan(.warning).contains("logRecord_by_severity"))
            #expect(!(try await plan(.info)).contains("logRecord_by_severity"))
            try await store.close()
        }
    }
}
