import ParleyDebugger
import ParleyJSON

/// What went wrong in the history store. Every write is one transaction: when one of these is thrown by a
/// method that writes, nothing of that call was stored.
public enum HistoryStoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The database could not be created or opened (directory missing or not writable, not a parleyd history).
    case cannotOpen(path: String, failure: DatabaseFailure)
    case invalidLimits(RetentionLimits.Problem)
    case noSuchSession(Int64)
    /// Appending to a session that has ended: the app's connection is gone; begin a new session.
    case sessionEnded(Int64)
    /// The session is still recording (its app is connected); it cannot be deleted.
    case sessionLive(Int64)
    /// The action text is longer than ``HistoryStore/maximumActionBytes``.
    case actionTooLong(bytes: Int, limit: Int)
    case noSuchEntry(Int64)
    /// The state to append is not JSON; the history only keeps states it can diff and export.
    case invalidState(JSONError)
    case invalidFilter(ActionFilterError)
    /// A line of an export file is wrong (line 1 is the header).
    case invalidImport(line: Int, problem: ImportProblem)
    /// The file's session was imported before (same peer id, app name, kind and start time to the millisecond):
    /// nothing was imported.
    case alreadyInHistory(session: Int64)
    /// Retention dropped entries of the session while it was being exported, so the export would miss them.
    case exportIncomplete(expected: Int, written: Int)
    /// SQLite failed: disk full, I/O error, database corrupted.
    case database(operation: String, failure: DatabaseFailure)
    /// No log record has this id (never, or retention dropped it).
    case noSuchLogRecord(Int64)
    /// No span has this id (never, or retention dropped it).
    case noSuchSpan(Int64)
    /// No stored span belongs to a trace with this id or id prefix.
    case noSuchTrace(String)
    /// The prefix is the start of several traces' ids; `matches` names some of them.
    case ambiguousTrace(String, matches: [String])
    /// Not a trace id nor a prefix of one: 8 to 32 hexadecimal digits.
    case invalidTraceID(String)
    /// A label (or span name) pattern that is not a glob.
    case invalidLabelPattern(ActionFilterError)

    public var description: String {
        switch self {
        case .cannotOpen(let path, let failure):
            "cannot open the history database \(path): \(failure)"
        case .invalidLimits(let problem):
            "invalid history limits: \(problem)"
        case .noSuchSession(let id):
            "there is no session \(id) in the history"
        case .sessionEnded(let id):
            "session \(id) has ended; a reconnecting app gets a new session"
        case .actionTooLong(let bytes, let limit):
            "the action text is \(bytes) bytes, above the limit of \(limit): nothing was stored; send what happened as the action (add(\"milk\")) and the data in the state"
        case .sessionLive(let id):
            "session \(id) is still recording (its app is connected); delete it once the app has disconnected"
        case .noSuchEntry(let sequence):
            "there is no entry \(sequence) in the history (it may have been dropped by retention)"
        case .invalidState(let error):
            "the state is not valid JSON, so it was not stored: \(error)"
        case .invalidFilter(let error):
            "cannot filter the history: \(error)"
        case .alreadyInHistory(let session):
            "this session was imported before, as session \(session); nothing was imported"
        case .invalidImport(let line, let problem):
            "cannot import: line \(line): \(problem); nothing was imported"
        case .exportIncomplete(let expected, let written):
            "the export is incomplete: the session had \(expected) entries when the export started, but retention dropped some while it ran (\(written) written); export again or raise the history limits"
        case .database(let operation, let failure):
            "the history database failed to \(operation): \(failure)"
        case .noSuchLogRecord(let id):
            "there is no log record \(id) in the history (it may have been dropped by retention)"
        case .noSuchSpan(let id):
            "there is no span \(id) in the history (it may have been dropped by retention)"
        case .noSuchTrace(let id):
            "no stored span belongs to a trace \(id.count < 32 ? "whose id starts with" : "with the id") \(id.prefix(64)) (retention may have dropped it)"
        case .ambiguousTrace(let prefix, let matches):
            "several traces' ids start with \(prefix): \(matches.joined(separator: ", ")); give more digits"
        case .invalidTraceID(let text):
            "\"\(text.prefix(64))\" is not a trace id: give 8 to 32 of its hexadecimal digits"
        case .invalidLabelPattern(let error):
            "cannot filter by label: \(error)"
        }
    }
}

/// Why SQLite failed, as a kind a caller can act on, with SQLite's own words for the person reading.
public struct DatabaseFailure: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The disk (or the file system's quota) is full: free space, or lower `historyMaxBytes`.
        case diskFull
        /// The file or its directory is read-only, or permission is denied.
        case notWritable
        /// The file is not a SQLite database, or it is damaged.
        case corrupt
        /// Another process holds a lock for longer than the busy timeout.
        case busy
        /// The operating system reported an I/O error.
        case ioError
        /// A row holds a value this version does not understand (a newer parleyd wrote it).
        case unreadableRow
        /// Anything else, with SQLite's primary result code.
        case other(code: Int32)
    }

    public var kind: Kind
    public var message: String

    public init(kind: Kind, message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }
}

/// What is wrong with one line of an export file.
public enum ImportProblem: Sendable, Equatable, CustomStringConvertible {
    case empty
    case invalidJSON(JSONError)
    /// `stateText` holds text that is not JSON.
    case stateTextNotJSON(JSONError)
    case notAnObject
    case missingField(String)
    case wrongType(field: String, expected: String, found: JSONKind)
    /// The header names another format, or a version this parleyd does not read.
    case unsupportedFormat(String)
    case invalidTime(field: String, text: String)
    case invalidScreenshot(Base64Error)
    case invalidKind(String)
    /// The file ends before all the entries its header announces (a truncated file), or has more.
    case entryCount(announced: Int, found: Int)
    /// The import was given lines after it had finished, or none at all.
    case noHeader
    /// A `log` or `span` line whose record is not of the documented shape.
    case invalidRecord(field: String, reason: String)
    /// The file ends before all the log records or spans its header announces (a truncated file), or has more.
    case recordCount(field: String, announced: Int, found: Int)

    public var description: String {
        switch self {
        case .empty: "the line is empty"
        case .invalidJSON(let error): "not JSON (\(error))"
        case .stateTextNotJSON(let error): "\"stateText\" is not a JSON document (\(error))"
        case .notAnObject: "not a JSON object"
        case .missingField(let field): "the \"\(field)\" member is missing"
        case .wrongType(let field, let expected, let found): "\"\(field)\" is a JSON \(found), not \(expected)"
        case .unsupportedFormat(let what): "not a parleyd history export: \(what)"
        case .invalidTime(let field, let text): "\"\(field)\" is \"\(text)\", not a UTC time like 2026-01-31T12:00:00.000Z"
        case .invalidScreenshot(let error): "\"screenshot\" is \(error)"
        case .invalidKind(let kind): "the session kind \"\(kind)\" is neither parley nor original"
        case .entryCount(let announced, let found): "the header announces \(announced) entries but the file has \(found) (is it truncated?)"
        case .noHeader: "the file does not start with the export header"
        case .invalidRecord(let field, let reason): "\"\(field)\" is not a valid record: \(reason)"
        case .recordCount(let field, let announced, let found):
            "the header announces \(announced) \(field) lines but the file has \(found) (is it truncated?)"
        }
    }
}
