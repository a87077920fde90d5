import Foundation
import ParleyJSON
import GRDB
import NIOCore
import ParleyDebugger
import ParleyTelemetry

/// Where a chunked export has got to; pass it back to get the next chunk. Entries are written first, then log
/// records, then spans.
public struct HistoryExportCursor: Sendable, Hashable, Codable {
    public var session: Int64
    /// The last entry written.
    public var after: Int64
    /// The session's last entry when the export started: entries appended later are not exported.
    public var through: Int64
    /// The entry count the header announced.
    public var announced: Int
    public var written: Int
    /// The same for log records and spans (nil in a cursor of a parleyd without them: none).
    public var logs: Progress?
    public var spans: Progress?

    public struct Progress: Sendable, Hashable, Codable {
        public var after: Int64
        public var through: Int64
        public var announced: Int
        public var written: Int
    }
}

/// Whole lines of an export file (see ``HistoryExportFormat``), the header first in the first chunk.
public struct HistoryExportChunk: Sendable {
    /// Lines, each ending with `\n`; the chunks concatenated in order are the file.
    public var data: ByteBuffer
    /// The cursor for the next chunk; nil when this chunk ends the file.
    public var next: HistoryExportCursor?
}

/// An import in progress, fed chunk by chunk. Until ``HistoryStore/finishImport(_:)`` its session and entries
/// are invisible; an error, ``HistoryStore/abandonImport(_:)`` or a restart of parleyd removes them.
///
/// A file whose session was imported before is still read to its end, and checked like any other, but nothing is
/// written: ``HistoryStore/finishImport(_:)`` then throws ``HistoryStoreError/alreadyInHistory(session:)``, so a
/// damaged copy is reported as damaged, not as already there.
public struct HistoryImport: Sendable, Hashable, Codable {
    /// The session being filled (it gets this id once finished); for a file imported before, that session.
    public let session: Int64
    /// Set when the file's session was imported before, as `session`: the import only checks.
    var checkingOnly: Bool?
    /// The history's last session id and entry sequence number when the import began: an abandoned import gives
    /// back the numbers it took, unless something else took later ones meanwhile.
    var numbersBefore: NumbersInUse?
    /// Lines read so far, the header included: the next line's number is `linesRead + 1`.
    public internal(set) var linesRead: Int
    let announced: Int
    var entriesRead: Int
    let ended: Int64?
    let started: Int64
    var lastTime: Int64?
    /// Log records and spans the header announced and the lines read so far held (nil: none).
    var announcedLogs: Int?
    var announcedSpans: Int?
    var logsRead: Int?
    var spansRead: Int?
}

/// The lines of one piece of an import, read and sorted by kind.
private struct ImportRows: Sendable {
    var entries: [(HistoryExportFormat.Entry, Data, Data)] = []
    var logs: [(LogRecord, Timestamp)] = []
    var spans: [(SpanRecord, Timestamp)] = []

    var count: Int { entries.count + logs.count + spans.count }

    init(_ lines: some Sequence<ByteBuffer>, firstLineNumber: Int) throws(HistoryStoreError) {
        let decoder = JSONDecoder()
        for (index, line) in lines.enumerated() {
            switch try HistoryExportFormat.readLine(line, lineNumber: firstLineNumber + index, decoder: decoder) {
            case .entry(let entry): entries.append((entry, Data(entry.state.readableBytesView), Data(entry.screenshot.readableBytesView)))
            case .log(let record, let received): logs.append((record, received))
            case .span(let span, let received): spans.append((span, received))
            }
        }
    }

    /// Stores the rows in `session`; returns the last entry's sequence, log record's id and span's id stored.
    func insert(into session: Int64, in db: Database) throws -> HistoryStore.Kept {
        var kept = HistoryStore.Kept()
        for (entry, state, screenshot) in entries {
            kept.entry = try HistoryStore.insertEntry(session: session, time: entry.time, action: entry.action, state: state, screenshot: screenshot, in: db)
        }
        let encoder = TelemetryRows.encoder()
        kept.log = try TelemetryRows.insert(
            logs: logs.lazy.map { ($0.0, $0.1.milliseconds) }, session: session, encoder: encoder, in: db).last ?? kept.log
        kept.span = try TelemetryRows.insert(
            spans: spans.lazy.map { ($0.0, $0.1.milliseconds) }, session: session, encoder: encoder, in: db).last ?? kept.span
        return kept
    }

    /// The latest time of what these rows recorded: the end of an imported session whose header has none.
    var lastTime: Int64? {
        ([entries.last?.0.time.milliseconds] + logs.map { Optional($0.1.milliseconds) } + spans.map { Optional($0.1.milliseconds) })
            .compactMap { $0 }.max()
    }
}

extension HistoryStore {
    // MARK: - Export

    /// The next piece of a session's export: about `maxBytes` of whole lines (at least one line per chunk,
    /// however large), starting with the header when `cursor` is nil. Each chunk is read in one transaction.
    public func exportChunk(session: Int64, cursor: HistoryExportCursor? = nil, maxBytes: Int = HistoryStore.defaultExportChunkBytes) async throws(HistoryStoreError) -> HistoryExportChunk {
        try await read("export a session") { db in
            var output = ByteBuffer()
            var cursor = cursor
            if cursor == nil {
                guard let summary = try SessionSummaryRecord.fetchOne(db, sql: Self.sessionQuery + " AND s.id = ? GROUP BY s.id", arguments: [session])?.summary else {
                    throw HistoryStoreError.noSuchSession(session)
                }
                let through = try Int64.fetchOne(db, sql: "SELECT MAX(sequence) FROM entry WHERE session = ?", arguments: [session]) ?? 0
                let logsThrough = try Int64.fetchOne(db, sql: "SELECT MAX(id) FROM logRecord WHERE session = ?", arguments: [session]) ?? 0
                let spansThrough = try Int64.fetchOne(db, sql: "SELECT MAX(id) FROM span WHERE session = ?", arguments: [session]) ?? 0
                HistoryExportFormat.writeHeader(summary, entries: summary.entryCount, logs: summary.logCount, spans: summary.spanCount, to: &output)
                cursor = HistoryExportCursor(
                    session: session, after: 0, through: through, announced: summary.entryCount, written: 0,
                    logs: .init(after: 0, through: logsThrough, announced: summary.logCount, written: 0),
                    spans: .init(after: 0, through: spansThrough, announced: summary.spanCount, written: 0)
                )
            }
            guard var position = cursor, position.session == session else { throw HistoryStoreError.noSuchSession(session) }
            var linesWritten = 0
            var budget = maxBytes - output.readableBytes
            /// Whether a line of `size` bytes still goes in this chunk (the first line always does).
            func fits(_ size: Int) -> Bool { size <= budget || linesWritten == 0 }
            let entries = try EntryRecord.fetchCursor(
                db,
                sql: "SELECT * FROM entry WHERE session = ? AND sequence > ? AND sequence <= ? ORDER BY sequence",
                arguments: [session, position.after, position.through]
            )
            var more = false
            while let entry = try entries.next(), let sequence = entry.sequence {
                let size = HistoryExportFormat.estimatedLineSize(
                    actionBytes: entry.action.utf8.count, stateSize: entry.stateSize, screenshotSize: entry.screenshotSize
                )
                guard fits(size) else {
                    more = true
                    break
                }
                // The entry and its content are deleted together (ON DELETE CASCADE), in this read's snapshot.
                guard let content = try EntryContentRecord.fetchOne(db, key: sequence) else { continue }
                HistoryExportFormat.writeEntry(
                    sequence: sequence, time: entry.time, action: entry.action, state: content.state, screenshot: content.screenshot,
                    to: &output
                )
                budget -= size
                linesWritten += 1
                position.after = sequence
                position.written += 1
            }
            let encoder = TelemetryRows.encoder()
            let decoder = JSONValueDecoder()
            /// Writes the session's rows of `table` that `progress` has still to write, each as the line `line` makes
            /// of it (nil: a row this version cannot read, skipped), while they fit in the chunk.
            func writeTelemetry(
                _ table: String, _ columns: String, _ progress: inout HistoryExportCursor.Progress, line: (Row) throws -> ByteBuffer?
            ) throws {
                let rows = try Row.fetchCursor(
                    db, sql: "SELECT \(columns) FROM \(table) WHERE session = ? AND id > ? AND id <= ? ORDER BY id",
                    arguments: [session, progress.after, progress.through])
                while let row = try rows.next() {
                    let id: Int64 = row["id"]
                    guard let line = try line(row) else { continue }
                    guard fits(line.readableBytes) else {
                        more = true
                        return
                    }
                    output.writeImmutableBuffer(line)
                    budget -= line.readableBytes
                    linesWritten += 1
                    progress.after = id
                    progress.written += 1
                }
            }
            if !more, var logs = position.logs {
                try writeTelemetry("logRecord", TelemetryRows.logColumns, &logs) { row in
                    try HistoryExportFormat.telemetryLine(
                        "log", TelemetryRows.log(row, decoder).record, received: Timestamp(milliseconds: row["received"]), encoder: encoder)
                }
                position.logs = logs
            }
            if !more, var spans = position.spans {
                try writeTelemetry("span", TelemetryRows.spanColumns, &spans) { row in
                    guard let span = TelemetryRows.span(row, decoder) else { return nil }
                    return try HistoryExportFormat.telemetryLine("span", span.span, received: Timestamp(milliseconds: row["received"]), encoder: encoder)
                }
                position.spans = spans
            }
            if !more {
                let counts = [(position.announced, position.written)] + [position.logs, position.spans].compactMap { $0.map { ($0.announced, $0.written) } }
                for (announced, written) in counts where written != announced {
                    throw HistoryStoreError.exportIncomplete(expected: announced, written: written)
                }
            }
            return HistoryExportChunk(data: output, next: more ? position : nil)
        }
    }

    /// A whole session's export file in memory (``exportChunk(session:cursor:maxBytes:)`` for streaming).
    public func export(session: Int64) async throws(HistoryStoreError) -> ByteBuffer {
        var file = ByteBuffer()
        var chunk = try await exportChunk(session: session)
        file.writeImmutableBuffer(chunk.data)
        while let next = chunk.next {
            chunk = try await exportChunk(session: session, cursor: next)
            file.writeImmutableBuffer(chunk.data)
        }
        return file
    }

    // MARK: - Import

    /// Imports a whole export file as a new session marked imported, in one transaction: every line is checked
    /// first, and any error (reported with its line number) stores nothing.
    public func importSession(_ file: ByteBuffer) async throws(HistoryStoreError) -> SessionSummary {
        let lines = HistoryExportFormat.lines(of: file)
        guard let first = lines.first else { throw .invalidImport(line: 1, problem: .noHeader) }
        let header = try HistoryExportFormat.readHeader(first, lineNumber: 1)
        let rows = try ImportRows(lines.dropFirst(), firstLineNumber: 2)
        try Self.checkCounts(
            announced: (header.entries, header.logs, header.spans), found: (rows.entries.count, rows.logs.count, rows.spans.count),
            line: lines.count + 1)
        let limits = self.limits
        let id = try await write("import a session") { db -> Int64 in
            let ended = header.ended.map { Timestamp($0).milliseconds } ?? rows.lastTime ?? Timestamp(header.started).milliseconds
            let id = try Self.insertImportedSession(header, ended: ended, importing: false, in: db)
            let kept = try rows.insert(into: id, in: db)
            _ = try Self.enforce(limits, keeping: kept, in: db)
            return id
        }
        logger.info(
            "history session imported",
            metadata: ["session": "\(id)", "entries": "\(rows.entries.count)", "logs": "\(rows.logs.count)", "spans": "\(rows.spans.count)"])
        return try await session(id)
    }

    /// The file's lines against its header's counts: a file cut short (or run on) is refused.
    private static func checkCounts(
        announced: (entries: Int, logs: Int, spans: Int), found: (entries: Int, logs: Int, spans: Int), line: Int
    ) throws(HistoryStoreError) {
        guard found.entries == announced.entries else {
            throw .invalidImport(line: line, problem: .entryCount(announced: announced.entries, found: found.entries))
        }
        guard found.logs == announced.logs else {
            throw .invalidImport(line: line, problem: .recordCount(field: "log", announced: announced.logs, found: found.logs))
        }
        guard found.spans == announced.spans else {
            throw .invalidImport(line: line, problem: .recordCount(field: "span", announced: announced.spans, found: found.spans))
        }
    }

    /// Starts a chunked import with the file's first piece: its header line and the entry lines that follow it.
    public func beginImport(firstPiece: ByteBuffer) async throws(HistoryStoreError) -> HistoryImport {
        var lines = firstPiece
        let newline = lines.readableBytesView.firstIndex(of: UInt8(ascii: "\n")).map { $0 - lines.readerIndex + 1 }
        var progress = try await beginImport(header: lines.readSlice(length: newline ?? lines.readableBytes)!)
        if lines.readableBytes > 0 { try await continueImport(&progress, lines: lines) }
        return progress
    }

    /// ``finishImport(_:)``, with a file whose session was imported before answered as that session (`alreadyInHistory`)
    /// rather than thrown: what parleyctl and the web debugger both show.
    public func completeImport(_ progress: HistoryImport) async throws(HistoryStoreError) -> (session: SessionSummary, alreadyInHistory: Bool) {
        do {
            return (try await finishImport(progress), false)
        } catch .alreadyInHistory(let existing) {
            return (try await session(existing), true)
        } catch {
            // Spelled out: without it this compiler (6.3.1) crashes on the typed rethrow.
            throw error
        }
    }

    /// Starts a chunked import with the file's first line (the header).
    public func beginImport(header line: ByteBuffer) async throws(HistoryStoreError) -> HistoryImport {
        var headerLine = line
        if headerLine.readableBytesView.last == 0x0A { headerLine.moveWriterIndex(to: headerLine.writerIndex - 1) }
        let header = try HistoryExportFormat.readHeader(headerLine, lineNumber: 1)
        let begun = try await write("begin an import") { db -> (Int64, NumbersInUse?, Bool) in
            let before = try NumbersInUse.read(in: db)
            do {
                return (try Self.insertImportedSession(header, ended: header.ended.map { Timestamp($0).milliseconds }, importing: true, in: db), before, false)
            } catch HistoryStoreError.alreadyInHistory(let existing) {
                return (existing, nil, true)
            }
        }
        return HistoryImport(
            session: begun.0, checkingOnly: begun.2 ? true : nil, numbersBefore: begun.1, linesRead: 1, announced: header.entries,
            entriesRead: 0, ended: header.ended.map { Timestamp($0).milliseconds }, started: Timestamp(header.started).milliseconds,
            lastTime: nil, announcedLogs: header.logs, announcedSpans: header.spans, logsRead: 0, spansRead: 0
        )
    }

    /// Adds whole lines (the lines following those fed before). The chunk is checked line by line before anything
    /// is written; on an error the whole import is abandoned.
    public func continueImport(_ progress: inout HistoryImport, lines chunk: ByteBuffer) async throws(HistoryStoreError) {
        let rows: ImportRows
        do {
            rows = try ImportRows(HistoryExportFormat.lines(of: chunk), firstLineNumber: progress.linesRead + 1)
            if progress.checkingOnly != true {
                let session = progress.session
                let batch = rows
                try await write("import entries") { db in
                    guard try Bool.fetchOne(db, sql: "SELECT 1 FROM session WHERE id = ? AND importing = 1", arguments: [session]) != nil else {
                        throw HistoryStoreError.noSuchSession(session)
                    }
                    _ = try batch.insert(into: session, in: db)
                }
            }
        } catch {
            try? await abandonImport(progress)
            throw error
        }
        progress.linesRead += rows.count
        progress.entriesRead += rows.entries.count
        progress.logsRead = (progress.logsRead ?? 0) + rows.logs.count
        progress.spansRead = (progress.spansRead ?? 0) + rows.spans.count
        if let last = rows.lastTime { progress.lastTime = max(progress.lastTime ?? last, last) }
    }

    /// Makes an import visible, after checking that the file had as many lines of each kind as its header
    /// announced.
    public func finishImport(_ progress: HistoryImport) async throws(HistoryStoreError) -> SessionSummary {
        do {
            try Self.checkCounts(
                announced: (progress.announced, progress.announcedLogs ?? 0, progress.announcedSpans ?? 0),
                found: (progress.entriesRead, progress.logsRead ?? 0, progress.spansRead ?? 0), line: progress.linesRead + 1)
        } catch {
            try? await abandonImport(progress)
            throw error
        }
        if progress.checkingOnly == true { throw .alreadyInHistory(session: progress.session) }
        let limits = self.limits
        let ended = progress.ended ?? progress.lastTime ?? progress.started
        try await write("finish an import") { db in
            try db.execute(sql: "UPDATE session SET importing = 0, ended = ? WHERE id = ? AND importing = 1", arguments: [ended, progress.session])
            guard db.changesCount == 1 else { throw HistoryStoreError.noSuchSession(progress.session) }
            let kept = Kept(
                entry: try Int64.fetchOne(db, sql: "SELECT MAX(sequence) FROM entry WHERE session = ?", arguments: [progress.session]),
                log: try Int64.fetchOne(db, sql: "SELECT MAX(id) FROM logRecord WHERE session = ?", arguments: [progress.session]),
                span: try Int64.fetchOne(db, sql: "SELECT MAX(id) FROM span WHERE session = ?", arguments: [progress.session])
            )
            _ = try Self.enforce(limits, keeping: kept, in: db)
        }
        logger.info(
            "history session imported",
            metadata: [
                "session": "\(progress.session)", "entries": "\(progress.entriesRead)", "logs": "\(progress.logsRead ?? 0)",
                "spans": "\(progress.spansRead ?? 0)",
            ])
        return try await session(progress.session)
    }

    /// Removes an unfinished import and everything it stored.
    public func abandonImport(_ progress: HistoryImport) async throws(HistoryStoreError) {
        guard progress.checkingOnly != true else { return }
        try await write("abandon an import") { db in
            for table in ["entry", "logRecord", "span"] {
                try db.execute(
                    sql: "DELETE FROM \(table) WHERE session = ? AND session IN (SELECT id FROM session WHERE importing = 1)", arguments: [progress.session])
            }
            try db.execute(sql: "DELETE FROM session WHERE id = ? AND importing = 1", arguments: [progress.session])
            if let before = progress.numbersBefore { try before.giveBack(in: db) }
        }
    }

    static func insertImportedSession(_ header: HistoryExportFormat.Header, ended: Int64?, importing: Bool, in db: Database) throws -> Int64 {
        // Importing is idempotent: a session imported before (same peer, app, kind and start, to the millisecond)
        // is not imported again. The session as recorded here does not count: importing its export makes the one
        // imported copy.
        if let existing = try Int64.fetchOne(
            db,
            sql: "SELECT id FROM session WHERE peerID = ? AND appName = ? AND kind = ? AND started = ? AND imported = 1 AND importing = 0 LIMIT 1",
            arguments: [header.peerID, header.appName, header.kind.rawValue, Timestamp(header.started).milliseconds]
        ) {
            throw HistoryStoreError.alreadyInHistory(session: existing)
        }
        var record = SessionRecord(
            peerID: header.peerID, appName: header.appName, kind: header.kind, imported: true, importing: importing,
            started: Timestamp(header.started), ended: ended.map(Timestamp.init(milliseconds:))
        )
        try record.insert(db)
        return record.id ?? db.lastInsertedRowID
    }
}

extension HistoryImport {
    /// Cuts an export file into pieces of whole lines of about `maxBytes` each (a longer line is a piece of its
    /// own): the first piece for ``HistoryStore/beginImport(header:)`` is the header line alone, the rest for
    /// ``HistoryStore/continueImport(_:lines:)``.
    public static func pieces(of file: ByteBuffer, maxBytes: Int = HistoryStore.defaultExportChunkBytes) -> [ByteBuffer] {
        var pieces: [ByteBuffer] = []
        var rest = file
        var current: ByteBuffer?
        var isHeader = true
        while rest.readableBytes > 0 {
            let lineLength = (rest.readableBytesView.firstIndex(of: 0x0A).map { $0 - rest.readerIndex + 1 }) ?? rest.readableBytes
            let line = rest.readSlice(length: lineLength)!
            if isHeader {
                pieces.append(line)
                isHeader = false
                continue
            }
            if var piece = current, piece.readableBytes + line.readableBytes <= maxBytes {
                piece.writeImmutableBuffer(line)
                current = piece
            } else {
                if let piece = current { pieces.append(piece) }
                current = line
            }
        }
        if let piece = current { pieces.append(piece) }
        return pieces
    }
}

/// The highest session id and entry sequence number the history has handed out (SQLite's `AUTOINCREMENT`
/// counters), so that an import that fails can give back the numbers it took.
struct NumbersInUse: Sendable, Hashable, Codable {
    var session: Int64
    var entry: Int64
    /// Nil in an import begun by a parleyd without log records and spans.
    var logRecord: Int64?
    var span: Int64?

    static func read(in db: Database) throws -> NumbersInUse {
        func counter(_ table: String) throws -> Int64 {
            try Int64.fetchOne(db, sql: "SELECT seq FROM sqlite_sequence WHERE name = ?", arguments: [table]) ?? 0
        }
        return NumbersInUse(session: try counter("session"), entry: try counter("entry"), logRecord: try counter("logRecord"), span: try counter("span"))
    }

    /// Lowers the counters to what they were before, or to the highest number still in use when something else
    /// (an app recording meanwhile) took a later one: numbers are never handed out twice, only the ones the failed
    /// import held, which no one saw, are handed out again.
    func giveBack(in db: Database) throws {
        try db.execute(
            sql: "UPDATE sqlite_sequence SET seq = MAX(?, (SELECT COALESCE(MAX(id), 0) FROM session)) WHERE name = 'session'",
            arguments: [session])
        try db.execute(
            sql: "UPDATE sqlite_sequence SET seq = MAX(?, (SELECT COALESCE(MAX(sequence), 0) FROM entry)) WHERE name = 'entry'",
            arguments: [entry])
        for (table, number) in [("logRecord", logRecord), ("span", span)] {
            guard let number else { continue }
            try db.execute(
                sql: "UPDATE sqlite_sequence SET seq = MAX(?, (SELECT COALESCE(MAX(id), 0) FROM \(table))) WHERE name = ?", arguments: [number, table])
        }
    }
}
