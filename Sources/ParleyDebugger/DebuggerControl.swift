import Foundation
import ParleyJSON
import ParleyWire

/// The debugger's control requests, answered by parleyd to local clients (parleyctl) on its control socket.
/// Wire names are `parley.debugger.*`; payloads are JSON. A LAN peer asking gets an error reply.
public enum DebuggerControl {
    /// → ``SessionList``: sessions in id order, a page at a time (`after` the last id seen, at most `limit`,
    /// default and maximum 500), so that no answer can outgrow a frame however many sessions the history keeps.
    public struct Sessions: Codable, Sendable, NamedMessage {
        public static let messageType = "parley.debugger.Sessions"
        public static let pageSize = 500
        public var after: Int64?
        public var limit: Int?
        public init(after: Int64? = nil, limit: Int? = nil) {
            self.after = after
            self.limit = limit
        }
    }

    public struct SessionList: Codable, Sendable, NamedMessage {
        public static let messageType = "parley.debugger.SessionList"
        public var sessions: [SessionSummary]
        /// Where the next page starts (`Sessions.after`); nil on the last page.
        public var nextAfter: Int64?
        public init(sessions: [SessionSummary], nextAfter: Int64? = nil) {
            self.sessions = sessions
            self.nextAfter = nextAfter
        }
    }

    /// → ``Entries``: entries in sequence order, optionally of one session and through an action filter;
    /// `after` and `limit` page through.
    public struct History: Codable, Sendable, NamedMessage {
        public static let messageType = "parley.debugger.History"
        /// The most entries a page holds; parleyd answers a larger `limit` with this many.
        public static let pageSize = 500
        /// The page parleyd answers with: `limit` within 1 ... ``pageSize``, whatever the client asked for.
        public var pageLimit: Int { min(max(1, limit), Self.pageSize) }
        public var session: Int64?
        /// Names (`{"filter": "noisy"}`) are resolved against the filters saved in parleyd's configuration.
        public var filter: ActionTextFilter?
        public var after: Int64?
        public var limit: Int
        /// Skip this many of the matching entries first (`parleyctl history --last`).
        public var offset: Int?
        /// Only entries recorded at or after this time.
        public var since: Date?
        public init(
            session: Int64? = nil, filter: ActionTextFilter? = nil, after: Int64? = nil, limit: Int = Self.pageSize, offset: Int? = nil,
            since: Date? = nil
        ) {
            self.session = session
            self.filter = filter
            self.after = after
            self.limit = limit
            self.offset = offset
            self.since = since
        }
    }

    /// → ``Following``: from now on, each entry parleyd records (of `session`, through `filter`, when given) is sent
    /// to this client as an ``Appended`` message, in recording order, until the connection ends. A new Follow
    /// replaces the previous one. `Following.lastSequence` is the newest entry already recorded when the follow
    /// began: list up to it with ``History``, and nothing is missed or printed twice.
    public struct Follow: Codable, Sendable, NamedMessage {
        public static let messageType = "parley.debugger.Follow"
        public var session: Int64?
        public var filter: ActionTextFilter?
        public init(session: Int64? = nil, filter: ActionTextFilter? = nil) {
            self.session = session
            self.filter = filter
        }
    }

    public struct Following: Codable, Sendable, NamedMessage {
        public static let messageType = "parley.debugger.Following"
        /// The newest sequence number in the history when the follow began (nil: the history was empty).
        public var lastSequence: Int64?
        public init(lastSequence: Int64?) { self.lastSequence = lastSequence }
    }

    /// Sent by parleyd to a following client: one entry just recorded.
    public struct Appended: Codable, Sendable, NamedMessage {
        public static let messageType = "parley.debugger.Appended"
        public var entry: EntrySummary
        public init(entry: EntrySummary) { self.entry = entry }
    }

    public struct Entries: Codable, Sendable, NamedMessage {
        public static let messageType = "parley.debugger.Entries"
        public var page: HistoryPage<EntrySummary>
        public init(page: HistoryPage<EntrySummary>) { self.page = page }
    }

    /// → ``Entry``: one entry with its state (and screenshot, when asked for).
    public struct Show: Codable, Sendable, NamedMessage {
        public static let messageType = "parley.debugger.Show"
        public var sequence: Int64
        public var includeScreenshot: Bool
        public init(sequence: Int64, includeScreenshot: Bool) {
            self.sequence = sequence
            self.includeScreenshot = includeScreenshot
        }
    }

    public struct Entry: Codable, Sendable, NamedMessage {
        public static let messageType = "parley.debugger.Entry"
        public var entry: EntryDetail
        public init(entry: EntryDetail) { self.entry = entry }
    }

    /// → ``DiffResult``: the difference from `from` (default: the entry before `to` in its session) to `to`.
    public struct Diff: Codable, Sendable, NamedMessage {
        public static let messageType = "parley.debugger.Diff"
        public var from: Int64?
        public var to: Int64
        public init(from: Int64?, to: Int64) {
            self.from = from
            self.to = to
        }
    }

    public struct DiffResult: Codable, Sendable, NamedMessage {
        public static let messageType = "parley.debugger.DiffResult"
        public var from: EntrySummary
        public var to: EntrySummary
        public var diff: StateDiff
        public init(from: EntrySummary, to: EntrySummary, diff: StateDiff) {
            self.from = from
            self.to = to
            self.diff = diff
        }
    }

    /// → ``ReplayResult``: sends entry `sequence`'s state back — to the app of its own session by default, to the
    /// connected app matching `to` (name or id prefix), or to every connected debugger app with `all`.
    public struct Replay: Codable, Sendable, NamedMessage {
        public static let messageType = "parley.debugger.Replay"
        public var sequence: Int64
        public var to: String?
        public var all: Bool
        public init(sequence: Int64, to: String?, all: Bool) {
            self.sequence = sequence
            self.to = to
            self.all = all
        }
    }

    public struct ReplayResult: Codable, Sendable, NamedMessage {
        public static let messageType = "parley.debugger.ReplayResult"
        /// The apps the state was sent to: name and peer id.
        public var sentTo: [Recipient]
        public struct Recipient: Codable, Sendable, Hashable {
            public var name: String
            public var id: String
            public init(name: String, id: String) {
                self.name = name
                self.id = id
            }
        }
        public init(sentTo: [Recipient]) { self.sentTo = sentTo }
    }

    /// → ``ExportChunk``: the next piece of `session`'s export, as JSON lines (docs/debugger.md has the format).
    /// The first request has no cursor; each reply's cursor is passed back, as it is, until it is nil. Pieces keep
    /// every reply well under the control socket's frame limit, however big the session.
    public struct Export: Codable, Sendable, NamedMessage {
        public static let messageType = "parley.debugger.Export"
        public var session: Int64
        /// Opaque: the `cursor` of the previous reply.
        public var cursor: String?
        public init(session: Int64, cursor: String?) {
            self.session = session
            self.cursor = cursor
        }
    }

    public struct ExportChunk: Codable, Sendable, NamedMessage {
        public static let messageType = "parley.debugger.ExportChunk"
        /// Whole lines, each ending in a newline.
        public var lines: String
        /// Pass back for the next piece; nil after the last.
        public var cursor: String?
        public init(lines: String, cursor: String?) {
            self.lines = lines
            self.cursor = cursor
        }
    }

    /// → ``ImportProgress``: one piece of an export file (whole lines; the first piece starts with the header
    /// line). The first request has no `progress`; each reply's is passed back with the next piece. With `last`
    /// the session is checked against its header and becomes visible; any error abandons the whole import, so a
    /// bad file stores nothing.
    public struct Import: Codable, Sendable, NamedMessage {
        public static let messageType = "parley.debugger.Import"
        public var lines: String
        /// Opaque: the `progress` of the previous reply.
        public var progress: String?
        public var last: Bool
        public init(lines: String, progress: String?, last: Bool) {
            self.lines = lines
            self.progress = progress
            self.last = last
        }
    }

    public struct ImportProgress: Codable, Sendable, NamedMessage {
        public static let messageType = "parley.debugger.ImportProgress"
        public var progress: String?
        /// Set once the import is finished, or at once when the session is in the history already.
        public var session: SessionSummary?
        /// True when nothing was imported because `session` is this file's session, imported before (import is
        /// idempotent). Absent from parleyd versions before it was.
        public var alreadyInHistory: Bool?
        public init(progress: String?, session: SessionSummary?, alreadyInHistory: Bool? = nil) {
            self.progress = progress
            self.session = session
            self.alreadyInHistory = alreadyInHistory
        }
    }

    /// → ``FilterList``: the named action filters of parleyd's configuration.
    public struct Filters: Codable, Sendable, NamedMessage {
        public static let messageType = "parley.debugger.Filters"
        public init() {}
    }

    public struct FilterList: Codable, Sendable, NamedMessage {
        public static let messageType = "parley.debugger.FilterList"
        public var filters: [String: ActionTextFilter]
        public init(filters: [String: ActionTextFilter]) { self.filters = filters }
    }

    /// → ``Deleted``: deletes ended sessions with their entries — the one `session` names, or (`endedBefore`)
    /// every session that ended before that time. A session still recording is refused.
    public struct DeleteSessions: Codable, Sendable, NamedMessage {
        public static let messageType = "parley.debugger.DeleteSessions"
        public var session: Int64?
        public var endedBefore: Date?
        public init(session: Int64? = nil, endedBefore: Date? = nil) {
            self.session = session
            self.endedBefore = endedBefore
        }
    }

    public struct Deleted: Codable, Sendable, NamedMessage {
        public static let messageType = "parley.debugger.Deleted"
        /// The sessions deleted, in id order.
        public var sessions: [Int64]
        public init(sessions: [Int64]) { self.sessions = sessions }
    }
}

/// A diff as people's tools show it, the same in `parleyctl diff --json` and the web API's `/api/diff`: the two
/// entries and the changes, each with its path as components and as text.
public struct DiffReport: Encodable, Sendable {
    public var from: EntrySummary
    public var to: EntrySummary
    public var changes: [StateDiff.Change]

    public init(_ result: DebuggerControl.DiffResult) {
        from = result.from
        to = result.to
        changes = result.diff.changes
    }
}
