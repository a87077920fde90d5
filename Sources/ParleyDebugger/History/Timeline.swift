import Foundation
import ParleyTelemetry

/// A log record as the history keeps it: numbered and tied to the session of the app that wrote it.
public struct StoredLogRecord: Sendable, Hashable, Codable {
    /// Unique among log records in the whole history and increasing as they arrive; never reused.
    public var id: Int64
    public var session: Int64
    public var record: LogRecord

    public init(id: Int64, session: Int64, record: LogRecord) {
        self.id = id
        self.session = session
        self.record = record
    }
}

/// A span as the history keeps it.
public struct StoredSpan: Sendable, Hashable, Codable {
    /// Unique among spans in the whole history and increasing as they arrive; never reused.
    public var id: Int64
    public var session: Int64
    public var span: SpanRecord

    public init(id: Int64, session: Int64, span: SpanRecord) {
        self.id = id
        self.session = session
        self.span = span
    }
}

/// One row of a session's timeline: a state change, a log line or a span, in time order (a state at the time
/// parleyd recorded it, a log line at the time the app wrote it, a span at its start).
public enum TimelineItem: Sendable, Hashable {
    case state(EntrySummary)
    case log(StoredLogRecord)
    case span(StoredSpan)

    public enum Kind: String, Sendable, Hashable, Codable, CaseIterable {
        case state, log, span
    }

    public var kind: Kind {
        switch self {
        case .state: .state
        case .log: .log
        case .span: .span
        }
    }

    /// The entry's sequence number, the log record's or the span's id: unique within its kind.
    public var id: Int64 {
        switch self {
        case .state(let entry): entry.sequence
        case .log(let log): log.id
        case .span(let span): span.id
        }
    }

    public var session: Int64 {
        switch self {
        case .state(let entry): entry.session
        case .log(let log): log.session
        case .span(let span): span.session
        }
    }

    /// Where the item sits on the timeline.
    public var time: UnixNanos {
        switch self {
        case .state(let entry): UnixNanos(entry.time)
        case .log(let log): log.record.time
        case .span(let span): span.span.start
        }
    }
}

/// On the wire (control socket, web API): `{"kind": "state"|"log"|"span", "item": …}` with the item's own
/// fields under `item`.
extension TimelineItem: Codable {
    enum CodingKeys: String, CodingKey { case kind, item }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        switch try container.decode(Kind.self, forKey: .kind) {
        case .state: self = .state(try container.decode(EntrySummary.self, forKey: .item))
        case .log: self = .log(try container.decode(StoredLogRecord.self, forKey: .item))
        case .span: self = .span(try container.decode(StoredSpan.self, forKey: .item))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(kind, forKey: .kind)
        switch self {
        case .state(let entry): try container.encode(entry, forKey: .item)
        case .log(let log): try container.encode(log, forKey: .item)
        case .span(let span): try container.encode(span, forKey: .item)
        }
    }
}

/// Which items of a session's timeline to list, and how many.
public struct TimelineQuery: Sendable, Hashable, Codable {
    public var session: Int64
    /// The kinds shown; all when empty.
    public var kinds: Set<TimelineItem.Kind>
    /// Log records at this severity or above (states and spans are not affected).
    public var minimumSeverity: LogSeverity?
    /// Log records whose label, and spans whose name, match this glob (`*` any run, `?` one character).
    public var label: String?
    /// Full-text search: log records whose message, and spans whose name, contain these words (SQLite FTS5's
    /// syntax for a plain phrase: words in order). States are matched on their action text.
    public var text: String?
    /// Items at or after this time only.
    public var since: UnixNanos?
    /// Matching items to skip first; the timeline is paged by position, as the web debugger scrolls it.
    public var offset: Int
    public var limit: Int

    public init(
        session: Int64, kinds: Set<TimelineItem.Kind> = [], minimumSeverity: LogSeverity? = nil, label: String? = nil, text: String? = nil,
        since: UnixNanos? = nil, offset: Int = 0, limit: Int = 200
    ) {
        self.session = session
        self.kinds = kinds
        self.minimumSeverity = minimumSeverity
        self.label = label
        self.text = text
        self.since = since
        self.offset = offset
        self.limit = limit
    }
}

/// Which log records to list across sessions (`parleyctl logs`): newest last, paged by id.
public struct LogQuery: Sendable, Hashable, Codable {
    /// One session's records, or every session's when nil.
    public var session: Int64?
    /// The records of the sessions of apps with this name, or whose peer id starts with this (as `--to` selects
    /// peers): an app's sessions across its reconnections. Read as nil from a peer that does not send it.
    public var app: String?
    public var minimumSeverity: LogSeverity?
    /// Labels matching this glob.
    public var label: String?
    /// Full-text search over messages (FTS5).
    public var text: String?
    public var since: UnixNanos?
    /// Records with a larger id only (the previous page's ``HistoryPage/nextAfter``).
    public var after: Int64?
    /// The newest `last` matching records (`parleyctl logs -n`); applied before `limit`.
    public var last: Int?
    public var limit: Int

    public init(
        session: Int64? = nil, app: String? = nil, minimumSeverity: LogSeverity? = nil, label: String? = nil, text: String? = nil,
        since: UnixNanos? = nil, after: Int64? = nil, last: Int? = nil, limit: Int = 500
    ) {
        self.session = session
        self.app = app
        self.minimumSeverity = minimumSeverity
        self.label = label
        self.text = text
        self.since = since
        self.after = after
        self.last = last
        self.limit = limit
    }
}

/// One trace as a list shows it: its root (or earliest) span, how long it took, how many spans and errors.
public struct TraceSummary: Sendable, Hashable, Codable {
    public var traceID: TraceID
    /// The root span's name (the earliest span's when the root has not arrived).
    public var name: String
    public var start: UnixNanos
    /// From the earliest start to the latest end of its spans.
    public var durationNanos: UInt64
    public var spanCount: Int
    /// Spans with status error.
    public var errorCount: Int
    /// The sessions its spans came from (one app, or several for a request between apps).
    public var sessions: [Int64]

    public init(traceID: TraceID, name: String, start: UnixNanos, durationNanos: UInt64, spanCount: Int, errorCount: Int, sessions: [Int64]) {
        self.traceID = traceID
        self.name = name
        self.start = start
        self.durationNanos = durationNanos
        self.spanCount = spanCount
        self.errorCount = errorCount
        self.sessions = sessions
    }
}
