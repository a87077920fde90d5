import Foundation
import GRDB
import NIOCore
import ParleyDebugger
import ParleyJSON
import ParleyTelemetry

// The rows of `logRecord` and `span` (HistorySchema, v5): written a batch at a time (up to 4 096 records) through
// RowInserter, and read back by column name.

enum TelemetryRows {
    /// Nanoseconds as SQLite's signed 64-bit integers: a time past 2262 (which no clock sends, but a hostile app
    /// may) is kept as the largest one.
    static func nanos(_ time: UnixNanos) -> Int64 { Int64(clamping: time.value) }

    /// Metadata, attributes, events and links as JSON text; empty when there are none, so that most rows store
    /// and decode nothing.
    static func json<Value: Encodable & Collection>(_ value: Value, _ encoder: JSONEncoder) throws -> String {
        value.isEmpty ? "" : String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    /// Metadata and attributes as JSON text, keys sorted, empty when there are none. Written here rather than by
    /// JSONEncoder, which cost a fifth of storing a batch of log records: the same text for the same values, a
    /// double always with its fraction or exponent (so it reads back as a double), and one that is not finite as
    /// a string, as ``TelemetryValue``'s `Encodable` writes it.
    static func json(_ attributes: TelemetryAttributes) -> String {
        guard !attributes.isEmpty else { return "" }
        var output: [UInt8] = []
        output.reserveCapacity(attributes.count * 32)
        write(attributes, to: &output)
        return String(decoding: output, as: UTF8.self)
    }

    private static func write(_ attributes: TelemetryAttributes, to output: inout [UInt8]) {
        output.append(UInt8(ascii: "{"))
        for (index, member) in attributes.sorted(by: { $0.key < $1.key }).enumerated() {
            if index > 0 { output.append(UInt8(ascii: ",")) }
            JSONValue.writeQuoted(member.key, to: &output)
            output.append(UInt8(ascii: ":"))
            write(member.value, to: &output)
        }
        output.append(UInt8(ascii: "}"))
    }

    private static func write(_ value: TelemetryValue, to output: inout [UInt8]) {
        switch value {
        case .string(let text): JSONValue.writeQuoted(text, to: &output)
        case .bool(let flag): output.append(contentsOf: (flag ? "true" : "false").utf8)
        case .int(let number): output.append(contentsOf: String(number).utf8)
        case .double(let number) where !number.isFinite: JSONValue.writeQuoted(String(describing: number), to: &output)
        // Swift's shortest form that reads back as the same double (`1.5`, `2.0`, `1e-07`) is JSON.
        case .double(let number): output.append(contentsOf: String(describing: number).utf8)
        case .array(let values):
            output.append(UInt8(ascii: "["))
            for (index, element) in values.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                write(element, to: &output)
            }
            output.append(UInt8(ascii: "]"))
        case .map(let members): write(members, to: &output)
        }
    }

    static func decode<Value: Decodable & ExpressibleByArrayLiteral>(_ type: Value.Type, _ text: String, _ decoder: JSONValueDecoder) -> Value {
        guard !text.isEmpty else { return [] }
        return (try? decoder.decode(Value.self, from: ByteBuffer(string: text))) ?? []
    }

    static func decode(_ text: String, _ decoder: JSONValueDecoder) -> TelemetryAttributes {
        guard !text.isEmpty else { return [:] }
        return (try? decoder.decode(TelemetryAttributes.self, from: ByteBuffer(string: text))) ?? [:]
    }

    static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        // The same record always gives the same text (exports compare equal), and no `\/` doubles paths and URLs.
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    // MARK: - Log records

    static let logRowColumns = [
        "session", "received", "time", "severity", "label", "message", "metadata", "source", "file", "function", "line", "traceID", "spanID",
        "droppedMetadata", "size",
    ]

    /// What a log record counts against `historyMaxBytes`: its texts (the message twice: once more in the
    /// full-text index), and its rows in the table, its indexes and the full-text index.
    static func size(of record: LogRecord, metadata: String) -> Int {
        record.message.utf8.count * 2 + record.label.utf8.count + metadata.utf8.count + record.source.utf8.count + record.file.utf8.count
            + record.function.utf8.count + (record.traceID == nil ? 0 : 48) + 3 * HistorySchema.rowOverhead
    }

    /// Stores log records in `session`, each with when parleyd received it (milliseconds), in order; returns their ids.
    static func insert(
        logs: some Collection<(record: LogRecord, received: Int64)>, session: Int64, encoder: JSONEncoder, in db: Database
    ) throws -> [Int64] {
        guard !logs.isEmpty else { return [] }
        var row = try RowInserter(into: "logRecord", columns: logRowColumns, rows: logs.count, in: db)
        var bytes = 0
        for (record, received) in logs {
            let metadata = json(record.metadata)
            let size = size(of: record, metadata: metadata)
            row.bind(session)
            row.bind(received)
            row.bind(nanos(record.time))
            row.bind(record.severity.number)
            row.bind(record.label)
            row.bind(record.message)
            row.bind(metadata)
            row.bind(record.source)
            row.bind(record.file)
            row.bind(record.function)
            row.bind(Int64(clamping: record.line))
            row.bind(record.traceID?.hex)
            row.bind(record.spanID?.hex)
            row.bind(record.droppedMetadata)
            row.bind(size)
            try row.endRow()
            bytes += size
        }
        let added = Added(ids: row.finish(), bytes: bytes)
        try added.index(table: "logRecord", into: "logText", column: "message", in: db)
        return added.ids
    }

    /// The columns a stored log record is read from (and the export writes).
    static let logColumns = "id, session, received, time, severity, label, message, metadata, source, file, function, line, traceID, spanID, droppedMetadata"

    static func log(_ row: Row, _ decoder: JSONValueDecoder) -> StoredLogRecord {
        let time: Int64 = row["time"]
        let line: Int64 = row["line"]
        let record = LogRecord(
            time: UnixNanos(UInt64(max(0, time))), severity: LogSeverity(number: row["severity"]) ?? .info, label: row["label"],
            message: row["message"], metadata: decode(row["metadata"], decoder), source: row["source"], file: row["file"],
            function: row["function"], line: UInt(max(0, line)), traceID: (row["traceID"] as String?).flatMap(TraceID.init(hex:)),
            spanID: (row["spanID"] as String?).flatMap(SpanID.init(hex:)), droppedMetadata: row["droppedMetadata"]
        )
        return StoredLogRecord(id: row["id"], session: row["session"], record: record)
    }

    // MARK: - Spans

    static let spanRowColumns = [
        "session", "received", "traceID", "spanID", "parentSpanID", "name", "kind", "start", "end", "statusCode", "statusMessage", "attributes",
        "events", "links", "droppedAttributes", "droppedEvents", "droppedLinks", "size",
    ]

    /// What a span counts against `historyMaxBytes`, as ``size(of:metadata:)`` counts a log record.
    static func size(of span: SpanRecord, attributes: String, events: String, links: String) -> Int {
        span.name.utf8.count * 2 + attributes.utf8.count + events.utf8.count + links.utf8.count + (span.status.message?.utf8.count ?? 0)
            + 80 + 3 * HistorySchema.rowOverhead
    }

    /// Stores spans in `session` as ``insert(logs:session:encoder:in:)`` stores log records.
    static func insert(
        spans: some Collection<(span: SpanRecord, received: Int64)>, session: Int64, encoder: JSONEncoder, in db: Database
    ) throws -> [Int64] {
        guard !spans.isEmpty else { return [] }
        var row = try RowInserter(into: "span", columns: spanRowColumns, rows: spans.count, in: db)
        var bytes = 0
        for (span, received) in spans {
            let attributes = json(span.attributes)
            let events = try json(span.events, encoder)
            let links = try json(span.links, encoder)
            let size = size(of: span, attributes: attributes, events: events, links: links)
            row.bind(session)
            row.bind(received)
            row.bind(span.traceID.hex)
            row.bind(span.spanID.hex)
            row.bind(span.parentSpanID?.hex)
            row.bind(span.name)
            row.bind(span.kind.rawValue)
            row.bind(nanos(span.start))
            row.bind(nanos(span.end))
            row.bind(span.status.code.rawValue)
            row.bind(span.status.message)
            row.bind(attributes)
            row.bind(events)
            row.bind(links)
            row.bind(span.droppedAttributes)
            row.bind(span.droppedEvents)
            row.bind(span.droppedLinks)
            row.bind(size)
            try row.endRow()
            bytes += size
        }
        let added = Added(ids: row.finish(), bytes: bytes)
        try added.index(table: "span", into: "spanText", column: "name", in: db)
        try added.summarizeTraces(in: db)
        return added.ids
    }

    static let spanColumns = """
        id, session, received, traceID, spanID, parentSpanID, name, kind, start, end, statusCode, statusMessage, attributes, events, links,
        droppedAttributes, droppedEvents, droppedLinks
        """

    /// A stored span; nil for a row this version cannot read (ids or a kind a newer parleyd wrote).
    static func span(_ row: Row, _ decoder: JSONValueDecoder) -> StoredSpan? {
        guard let traceID = TraceID(hex: row["traceID"]), let spanID = SpanID(hex: row["spanID"]) else { return nil }
        let start: Int64 = row["start"]
        let end: Int64 = row["end"]
        let span = SpanRecord(
            traceID: traceID, spanID: spanID, parentSpanID: (row["parentSpanID"] as String?).flatMap(SpanID.init(hex:)), name: row["name"],
            kind: SpanRecord.Kind(rawValue: row["kind"]) ?? .internal, start: UnixNanos(UInt64(max(0, start))),
            end: UnixNanos(UInt64(max(0, end))),
            status: SpanRecord.Status(code: SpanRecord.Status.Code(rawValue: row["statusCode"]) ?? .unset, message: row["statusMessage"]),
            attributes: decode(row["attributes"], decoder), events: decode([SpanRecord.Event].self, row["events"], decoder),
            links: decode([SpanRecord.Link].self, row["links"], decoder), droppedAttributes: row["droppedAttributes"],
            droppedEvents: row["droppedEvents"], droppedLinks: row["droppedLinks"]
        )
        return StoredSpan(id: row["id"], session: row["session"], span: span)
    }

    // MARK: - Indexing and counting, once per batch

    /// The rows one call stored. Their full-text entries and their share of `totals` are written once for all of
    /// them: per row (as triggers did) the full-text index cost four times the rows themselves.
    private struct Added {
        var ids: [Int64]
        var bytes: Int

        func index(table: String, into index: String, column: String, in db: Database) throws {
            guard let first = ids.first, let last = ids.last else { return }
            // One writer, AUTOINCREMENT, and nothing else inserted into `table` during the call: the ids are
            // consecutive, and this range holds exactly the rows stored.
            try db.execute(
                sql: "INSERT INTO \(index)(rowid, \(column)) SELECT id, \(column) FROM \(table) WHERE id BETWEEN ? AND ?", arguments: [first, last])
            try db.execute(sql: "UPDATE totals SET entries = entries + ?, bytes = bytes + ?", arguments: [ids.count, bytes])
        }

        /// Adds stored spans to their traces' summaries, one row per trace and session.
        func summarizeTraces(in db: Database) throws {
            guard let first = ids.first, let last = ids.last else { return }
            try db.execute(
                sql: """
                    INSERT INTO traceSummary (traceID, session, start, end, spans, errors)
                    SELECT traceID, session, MIN(start), MAX(end), COUNT(*), SUM(statusCode = 'error') FROM span
                    WHERE id BETWEEN ? AND ? GROUP BY traceID, session
                    ON CONFLICT (traceID, session) DO UPDATE SET
                        start = MIN(start, excluded.start), end = MAX(end, excluded.end),
                        spans = spans + excluded.spans, errors = errors + excluded.errors
                    """,
                arguments: [first, last])
        }
    }
}
