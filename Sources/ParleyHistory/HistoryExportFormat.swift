import Foundation
import NIOCore
import ParleyDebugger
import ParleyJSON
import ParleyTelemetry

/// The export format of a history session (`parleyctl export SESSION FILE`, `parleyctl import FILE`): JSON lines,
/// UTF-8, one JSON object per line, each line ending with `\n`.
///
/// Line 1, the header:
///
/// ```json
/// {"format":"parley-debugger-history","version":1,"session":{"peerID":"6F1C…","appName":"Listr","kind":"parley","started":"2026-11-21T10:00:00.000Z","ended":"2026-11-21T10:05:00.250Z"},"entries":2}
/// ```
///
/// Then one line per entry, oldest first:
///
/// ```json
/// {"sequence":17,"time":"2026-11-21T10:00:01.456Z","action":"add(\"milk\")","state":{"items":["milk"],"total":1.10},"screenshot":"iVBORw0KGgo…"}
/// ```
///
/// * `state` is the recorded state's JSON text, verbatim: same bytes, same number text, never re-encoded. A state
///   that holds line breaks between its tokens (pretty-printed) cannot sit on one line; it is written as
///   `"stateText"` instead: a JSON string whose content is the exact state text. Either way, import stores the
///   recorded bytes exactly.
/// * `screenshot` is the PNG in padded base64 (RFC 4648), `""` for none.
/// * Times are UTC with milliseconds, the precision the history keeps. `ended` is `null` for a session that was
///   still open when exported. `kind` is `parley` or `original` (files of Parley 0.x say `legacy`, read as
///   `original`).
/// * `sequence` is the entry's number in the exporting history, for reference; import numbers entries anew.
/// * `entries` counts the entry lines, so that import recognises a truncated file.
///
/// Version 2 adds the app's log records and spans, after the entries: the header counts them too
/// (`"logs":L,"spans":S`), and each is a line of its own holding the record as the app sent it
/// (`parley.telemetry.Batch`'s shapes, docs/protocol.md) and when parleyd received it:
///
/// ```json
/// {"log":{"timeUnixNano":1795258801456000000,"severity":"info","label":"listr.store","message":"saved 3 items"},"received":"2026-11-21T10:00:01.460Z"}
/// {"span":{"traceId":"4bf9…","spanId":"00f0…","name":"GET /api/items","kind":"client","startTimeUnixNano":…,"endTimeUnixNano":…},"received":"…"}
/// ```
///
/// A session without log records or spans is written as version 1, which every parleyd reads. Readers ignore
/// members they do not know (later versions of a format may add some) and refuse versions they do not know.
public enum HistoryExportFormat {
    public static let name = "parley-debugger-history"
    /// The version written for a session with log records or spans; ``plainVersion`` for one without.
    public static let version = 2
    public static let plainVersion = 1

    /// The session as a header describes it.
    public struct Header: Sendable, Hashable {
        public var peerID: String
        public var appName: String
        public var kind: SessionSummary.Kind
        public var started: Date
        public var ended: Date?
        /// The number of entry lines that follow.
        public var entries: Int
        /// The number of log record and span lines after them (0 in version 1).
        public var logs: Int
        public var spans: Int
    }

    /// One line after the header, read.
    enum Line {
        case entry(Entry)
        case log(LogRecord, received: Timestamp)
        case span(SpanRecord, received: Timestamp)
    }

    /// One entry line, read.
    struct Entry {
        var time: Timestamp
        var action: String
        var state: ByteBuffer
        var screenshot: ByteBuffer
    }

    static func writeHeader(_ session: SessionSummary, entries: Int, logs: Int = 0, spans: Int = 0, to output: inout ByteBuffer) {
        let plain = logs == 0 && spans == 0
        output.writeString(#"{"format":"# + quoted(name) + #","version":\#(plain ? plainVersion : version),"session":{"peerID":"# + quoted(session.peerID))
        output.writeString(#","appName":"# + quoted(session.appName) + #","kind":"# + quoted(session.kind.rawValue))
        output.writeString(#","started":"# + quoted(Timestamp(session.started).iso8601))
        output.writeString(#","ended":"# + (session.ended.map { quoted(Timestamp($0).iso8601) } ?? "null"))
        output.writeString(#"},"entries":\#(entries)"#)
        if !plain { output.writeString(#","logs":\#(logs),"spans":\#(spans)"#) }
        output.writeString("}\n")
    }

    /// A log record's or span's line: `{"log":…,"received":"…"}`. The encoder escapes every control character, so
    /// the record stays on its line.
    static func telemetryLine<Record: Encodable>(_ key: String, _ record: Record, received: Timestamp, encoder: JSONEncoder) throws -> ByteBuffer {
        var line = ByteBuffer()
        line.writeString(#"{"\#(key)":"#)
        line.writeBytes(try encoder.encode(record))
        line.writeString(#","received":"# + quoted(received.iso8601) + "}\n")
        return line
    }

    static func writeEntry(sequence: Int64, time: Timestamp, action: String, state: Data, screenshot: Data, to output: inout ByteBuffer) {
        output.writeString(#"{"sequence":\#(sequence),"time":"# + quoted(time.iso8601) + #","action":"# + quoted(action))
        if state.contains(0x0A) || state.contains(0x0D) {
            // Raw line breaks can only be whitespace between tokens (JSON strings cannot hold them unescaped).
            output.writeString(#","stateText":"# + quoted(String(decoding: state, as: UTF8.self)))
        } else {
            output.writeString(#","state":"#)
            output.writeBytes(state)
        }
        output.writeString(#","screenshot":""#)
        Base64.encode(ByteBuffer(bytes: screenshot), into: &output)
        output.writeString("\"}\n")
    }

    /// About how many bytes an entry's line takes (the export's chunking budget).
    static func estimatedLineSize(actionBytes: Int, stateSize: Int, screenshotSize: Int) -> Int {
        96 + actionBytes * 2 + stateSize + (screenshotSize + 2) / 3 * 4
    }

    static func readHeader(_ line: ByteBuffer, lineNumber: Int) throws(HistoryStoreError) -> Header {
        let fields = try members(of: line, lineNumber: lineNumber)
        let format = try string(fields, "format", line, lineNumber)
        guard format == name else { throw .invalidImport(line: lineNumber, problem: .unsupportedFormat("the format is \"\(format)\", not \"\(name)\"")) }
        let versionMember = try member(fields, "version", .number, lineNumber)
        let versionText = String(buffer: slice(line, versionMember))
        guard let fileVersion = Int(versionText), (plainVersion...version).contains(fileVersion) else {
            throw .invalidImport(
                line: lineNumber, problem: .unsupportedFormat("version \(versionText); this parleyd reads versions \(plainVersion) to \(version)"))
        }
        let sessionMember = try member(fields, "session", .object, lineNumber)
        let sessionBytes = slice(line, sessionMember)
        let session = try members(of: sessionBytes, lineNumber: lineNumber)
        let kindText = try string(session, "kind", sessionBytes, lineNumber)
        guard let kind = SessionSummary.Kind(exported: kindText) else { throw .invalidImport(line: lineNumber, problem: .invalidKind(kindText)) }
        let entriesMember = try member(fields, "entries", .number, lineNumber)
        guard let entries = Int(String(buffer: slice(line, entriesMember))), entries >= 0 else {
            throw .invalidImport(line: lineNumber, problem: .wrongType(field: "entries", expected: "a count", found: .number))
        }
        var ended: Date?
        if let endedMember = session["ended"], endedMember.kind != .null {
            ended = try time(session, "ended", sessionBytes, lineNumber).date
        }
        func count(_ key: String) throws(HistoryStoreError) -> Int {
            guard fileVersion >= 2 else { return 0 }
            let text = String(buffer: slice(line, try member(fields, key, .number, lineNumber)))
            guard let count = Int(text), count >= 0 else {
                throw .invalidImport(line: lineNumber, problem: .wrongType(field: key, expected: "a count", found: .number))
            }
            return count
        }
        return Header(
            peerID: try string(session, "peerID", sessionBytes, lineNumber),
            appName: try string(session, "appName", sessionBytes, lineNumber),
            kind: kind,
            started: try time(session, "started", sessionBytes, lineNumber).date,
            ended: ended,
            entries: entries,
            logs: try count("logs"),
            spans: try count("spans")
        )
    }

    /// A line after the header: a log record's, a span's, or else an entry's. A record is checked and cut to
    /// ``TelemetryLimits`` as parleyd checks what apps send: an export file is no more trusted than an app.
    static func readLine(_ line: ByteBuffer, lineNumber: Int, decoder: JSONDecoder) throws(HistoryStoreError) -> Line {
        let fields = try members(of: line, lineNumber: lineNumber)
        if let member = fields["log"] {
            let batch = try checked(slice(line, member), "log", lineNumber) { TelemetryBatch(logs: [try decoder.decode(LogRecord.self, from: $0)]) }
            return .log(batch.logs[0], received: try time(fields, "received", line, lineNumber))
        }
        if let member = fields["span"] {
            let batch = try checked(slice(line, member), "span", lineNumber) { TelemetryBatch(spans: [try decoder.decode(SpanRecord.self, from: $0)]) }
            return .span(batch.spans[0], received: try time(fields, "received", line, lineNumber))
        }
        return .entry(try readEntry(line, lineNumber: lineNumber))
    }

    private static func checked(
        _ bytes: ByteBuffer, _ field: String, _ lineNumber: Int, _ decode: (Data) throws -> TelemetryBatch
    ) throws(HistoryStoreError) -> TelemetryBatch {
        do {
            return try TelemetryLimits.default.check(byteCount: bytes.readableBytes) { try decode(Data(bytes.readableBytesView)) }.batch
        } catch .malformed(let reason) {
            throw .invalidImport(line: lineNumber, problem: .invalidRecord(field: field, reason: reason))
        } catch {
            throw .invalidImport(line: lineNumber, problem: .invalidRecord(field: field, reason: error.description))
        }
    }

    static func readEntry(_ line: ByteBuffer, lineNumber: Int) throws(HistoryStoreError) -> Entry {
        let fields = try members(of: line, lineNumber: lineNumber)
        let state: ByteBuffer
        if let stateMember = fields["state"] {
            state = slice(line, stateMember)
        } else if fields["stateText"] != nil {
            state = ByteBuffer(string: try string(fields, "stateText", line, lineNumber))
            do {
                try JSONSkimmer.validate(state)
            } catch {
                throw .invalidImport(line: lineNumber, problem: .stateTextNotJSON(error))
            }
        } else {
            throw .invalidImport(line: lineNumber, problem: .missingField("state"))
        }
        let screenshotText = try string(fields, "screenshot", line, lineNumber)
        let screenshot: ByteBuffer
        do {
            screenshot = try Base64.decode(screenshotText)
        } catch {
            throw .invalidImport(line: lineNumber, problem: .invalidScreenshot(error))
        }
        return Entry(
            time: try time(fields, "time", line, lineNumber),
            action: try string(fields, "action", line, lineNumber),
            state: state,
            screenshot: screenshot
        )
    }

    /// The lines of `data`, split at `\n`; a final `\n` does not start another line.
    static func lines(of data: ByteBuffer) -> [ByteBuffer] {
        var lines: [ByteBuffer] = []
        var rest = data
        while rest.readableBytes > 0 {
            if let end = rest.readableBytesView.firstIndex(of: 0x0A) {
                lines.append(rest.readSlice(length: end - rest.readerIndex)!)
                rest.moveReaderIndex(forwardBy: 1)
            } else {
                lines.append(rest.readSlice(length: rest.readableBytes)!)
            }
        }
        return lines
    }

    // MARK: - Reading members

    private static func members(of line: ByteBuffer, lineNumber: Int) throws(HistoryStoreError) -> [String: JSONSkimmer.Member] {
        guard line.readableBytes > 0 else { throw .invalidImport(line: lineNumber, problem: .empty) }
        let members: [JSONSkimmer.Member]?
        do {
            members = try JSONSkimmer.topLevelMembers(of: line)
        } catch {
            throw .invalidImport(line: lineNumber, problem: .invalidJSON(error))
        }
        guard let members else { throw .invalidImport(line: lineNumber, problem: .notAnObject) }
        return Dictionary(members.map { ($0.key, $0) }, uniquingKeysWith: { _, last in last })
    }

    private static func member(_ fields: [String: JSONSkimmer.Member], _ key: String, _ kind: JSONKind, _ lineNumber: Int) throws(HistoryStoreError) -> JSONSkimmer.Member {
        guard let member = fields[key] else { throw .invalidImport(line: lineNumber, problem: .missingField(key)) }
        guard member.kind == kind else {
            throw .invalidImport(line: lineNumber, problem: .wrongType(field: key, expected: "a \(kind)", found: member.kind))
        }
        return member
    }

    private static func string(_ fields: [String: JSONSkimmer.Member], _ key: String, _ line: ByteBuffer, _ lineNumber: Int) throws(HistoryStoreError) -> String {
        let member = try member(fields, key, .string, lineNumber)
        guard case .string(let text)? = try? JSONValue(parsing: slice(line, member)) else {
            throw .invalidImport(line: lineNumber, problem: .wrongType(field: key, expected: "a string", found: member.kind))
        }
        return text
    }

    private static func time(_ fields: [String: JSONSkimmer.Member], _ key: String, _ line: ByteBuffer, _ lineNumber: Int) throws(HistoryStoreError) -> Timestamp {
        let text = try string(fields, key, line, lineNumber)
        guard let time = Timestamp(iso8601: text) else { throw .invalidImport(line: lineNumber, problem: .invalidTime(field: key, text: text)) }
        return time
    }

    private static func slice(_ line: ByteBuffer, _ member: JSONSkimmer.Member) -> ByteBuffer {
        line.getSlice(at: line.readerIndex + member.valueRange.lowerBound, length: member.valueRange.count)!
    }

    private static func quoted(_ text: String) -> String {
        JSONValue.string(text).jsonText()
    }
}
