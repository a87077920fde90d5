import ParleyTelemetry
import ParleyWire

/// The control requests over an app's logs and traces, answered by parleyd to local clients (parleyctl) on its
/// control socket, as ``DebuggerControl``'s are. Wire names are `parley.telemetry.*`; payloads are JSON.
public enum TelemetryControl {
    /// → ``LogPage``: log records, oldest first, through the query's filters.
    public struct Logs: Codable, Sendable, NamedMessage {
        public static let messageType = "parley.telemetry.Logs"
        /// The most records a page holds; a larger `limit` is answered with this many.
        public static let pageSize = 500
        public var query: LogQuery
        public init(query: LogQuery) { self.query = query }
    }

    public struct LogPage: Codable, Sendable, NamedMessage {
        public static let messageType = "parley.telemetry.LogPage"
        public var page: HistoryPage<StoredLogRecord>
        public init(page: HistoryPage<StoredLogRecord>) { self.page = page }
    }

    /// → ``FollowingLogs``: from now on each log record parleyd stores that passes the query's filters (`after`,
    /// `last` and `limit` aside) is sent to this client as a ``LogAppended`` message, in order, until the
    /// connection ends. `FollowingLogs.lastID` is the newest record already stored when the follow began: list up
    /// to it with ``Logs`` and nothing is missed or printed twice.
    public struct FollowLogs: Codable, Sendable, NamedMessage {
        public static let messageType = "parley.telemetry.FollowLogs"
        public var query: LogQuery
        public init(query: LogQuery) { self.query = query }
    }

    public struct FollowingLogs: Codable, Sendable, NamedMessage {
        public static let messageType = "parley.telemetry.FollowingLogs"
        public var lastID: Int64?
        public init(lastID: Int64?) { self.lastID = lastID }
    }

    public struct LogAppended: Codable, Sendable, NamedMessage {
        public static let messageType = "parley.telemetry.LogAppended"
        public var record: StoredLogRecord
        public init(record: StoredLogRecord) { self.record = record }
    }

    /// → ``TraceList``: the newest traces (of one session, or of one app's sessions, when given), newest first.
    public struct Traces: Codable, Sendable, NamedMessage {
        public static let messageType = "parley.telemetry.Traces"
        public static let pageSize = 200
        public var session: Int64?
        /// As ``LogQuery/app``.
        public var app: String?
        public var limit: Int
        public init(session: Int64? = nil, app: String? = nil, limit: Int = 50) {
            self.session = session
            self.app = app
            self.limit = limit
        }
    }

    public struct TraceList: Codable, Sendable, NamedMessage {
        public static let messageType = "parley.telemetry.TraceList"
        public var traces: [TraceSummary]
        public init(traces: [TraceSummary]) { self.traces = traces }
    }

    /// → ``TraceDetail``: every stored span of one trace, by start time. `traceID` may be a unique prefix of at
    /// least 8 hexadecimal digits.
    public struct Trace: Codable, Sendable, NamedMessage {
        public static let messageType = "parley.telemetry.Trace"
        public var traceID: String
        public init(traceID: String) { self.traceID = traceID }
    }

    public struct TraceDetail: Codable, Sendable, NamedMessage {
        public static let messageType = "parley.telemetry.TraceDetail"
        public var spans: [StoredSpan]
        public init(spans: [StoredSpan]) { self.spans = spans }
    }

    /// → ``SpanPage``: one session's spans, oldest first, paged by id (`parleyctl export --har` reads the client
    /// spans).
    public struct Spans: Codable, Sendable, NamedMessage {
        public static let messageType = "parley.telemetry.Spans"
        public static let pageSize = 500
        public var session: Int64
        /// Only spans of this kind when given.
        public var kind: SpanRecord.Kind?
        public var after: Int64?
        public var limit: Int
        public init(session: Int64, kind: SpanRecord.Kind? = nil, after: Int64? = nil, limit: Int = Self.pageSize) {
            self.session = session
            self.kind = kind
            self.after = after
            self.limit = limit
        }
    }

    public struct SpanPage: Codable, Sendable, NamedMessage {
        public static let messageType = "parley.telemetry.SpanPage"
        public var page: HistoryPage<StoredSpan>
        public init(page: HistoryPage<StoredSpan>) { self.page = page }
    }
}
