import Foundation
import GRDB
import ParleyDebugger
import ParleyTelemetry

// The rows of `logRecord` and `span` (HistorySchema, v5): written with cached statements (a batch holds up to
// 4 096 records) and read back by column name.

enum TelemetryRows {
    /// Nanoseconds as SQLite's signed 64-bit integers: a time past 2262 (which no clock sends, but a hostile app
    /// may) is kept as the largest one.
    static func nanos(_ time: UnixNanos) -> Int64 { Int64(clamping: time.value) }

    /// Metadata, attributes, events and links as JSON text; empty when there are none, so that most rows store
    /// and decode nothing.
    static func json<Value: Encodable & Collection>(_ value: Value, _ encoder: JSONEncoder) throws -> String {
        value.isEmpty ? "" : String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    static func decode<Value: Decodable & ExpressibleByArrayLiteral>(_ type: Value.Type, _ text: String, _ decoder: JSONDecoder) -> Value {
        guard !text.isEmpty else { return [] }
        return (try? decoder.decode(Value.self, from: Data(text.utf8))) ?? []
    }

    static func decode(_ text: String, _ decoder: JSONDecoder) -> TelemetryAttributes {
        guard !text.isEmpty else { return [:] }
        return (try? decoder.decode(TelemetryAttributes.self, from: Data(text.utf8))) ?? [:]
    }

    static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        // The same record always gives the same text (exports compare equal), and no `\/` doubles paths and URLs.
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    // MARK: - Log records

    static let insertLogSQL = """
        INSERT INTO logRecord (session, received, time, severity, label, message, metadata, source, file, function, line, traceID, spanID,
                               droppedMetadata, size)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        """

    /// What a log record counts against `historyMaxBytes`: its texts (the message twice: once more in the
    /// full-text index), and its rows in the table, its indexes and the full-text index.
    static func size(of record: LogRecord, metadata: String) -> Int {
        record.message.utf8.count * 2 + record.label.utf8.count + metadata.utf8.count + record.source.utf8.count + record.file.utf8.count
            + record.function.utf8.count + (record.traceID == nil ? 0 : 48) + 3 * HistorySchema.rowOverhead
    }

    static func insert(_ record: LogRecord, session: Int64, received: Int64, encoder: JSONEncoder, in db: Database) throws -> Int64 {
        let metadata = try json(record.metadata, encoder)
        let statement = try db.cachedStatement(sql: insertLogSQL)
        try statement.execute(arguments: [
            session, received, nanos(record.time), record.severity.number, record.label, record.message, metadata, record.source, record.file,
            record.function, Int64(clamping: record.line), record.traceID?.hex, record.spanID?.hex, record.droppedMetadata,
            size(of: record, metadata: metadata),
        ])
        return db.lastInsertedRowID
    }

    /// The columns a stored log record is read from (and the export writes).
    static let logColumns = "id, session, received, time, severity, label, message, metadata, source, file, function, line, traceID, spanID, droppedMetadata"

    static func log(_ row: Row, _ decoder: JSONDecoder) -> StoredLogRecord {
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

    static let insertSpanSQL = """
        INSERT INTO span (session, received, traceID, spanID, parentSpanID, name, kind, start, end, statusCode, statusMessage, attributes,
                          events, links, droppedAttributes, droppedEvents, droppedLinks, size)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        """

    /// What a span counts against `historyMaxBytes`, as ``size(of:metadata:)`` counts a log record.
    static func size(of span: SpanRecord, attributes: String, events: String, links: String) -> Int {
        span.name.utf8.count * 2 + attributes.utf8.count + events.utf8.count + links.utf8.count + (span.status.message?.utf8.count ?? 0)
            + 80 + 3 * HistorySchema.rowOverhead
    }

    static func insert(_ span: SpanRecord, session: Int64, received: Int64, encoder: JSONEncoder, in db: Database) throws -> Int64 {
        let attributes = try json(span.attributes, encoder)
        let events = try json(span.events, encoder)
        let links = try json(span.links, encoder)
        let statement = try db.cachedStatement(sql: insertSpanSQL)
        try statement.execute(arguments: [
            session, received, span.traceID.hex, span.spanID.hex, span.parentSpanID?.hex, span.name, span.kind.rawValue, nanos(span.start),
            nanos(span.end), span.status.code.rawValue, span.status.message, attributes, events, links, span.droppedAttributes,
            span.droppedEvents, span.droppedLinks, size(of: span, attributes: attributes, events: events, links: links),
        ])
        return db.lastInsertedRowID
    }

    static let spanColumns = """
        id, session, received, traceID, spanID, parentSpanID, name, kind, start, end, statusCode, statusMessage, attributes, events, links,
        droppedAttributes, droppedEvents, droppedLinks
        """

    /// A stored span; nil for a row this version cannot read (ids or a kind a newer parleyd wrote).
    static func span(_ row: Row, _ decoder: JSONDecoder) -> StoredSpan? {
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
}
