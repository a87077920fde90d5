import Foundation
import NIOCore
import ParleyDebugger
import ParleyDrawer
import ParleyTelemetry

/// What the web debugger shows and does, supplied by parleyd: the history, the diff, replay, the peers. The web
/// layer turns HTTP requests into these calls and their answers into JSON; it never reaches the store or the
/// transceiver itself.
///
/// Errors: the backend throws its own errors; the web layer answers a ``WebProblem`` as it is, any other error as
/// ``problem(for:)`` describes it, or as a 500 whose detail is the error's description.
public protocol WebDebuggerBackend: Sendable {
    /// Newest first: sessions with an id below `before` (all when nil), at most `limit`.
    func sessions(before: Int64?, limit: Int) async throws -> [WebSession]
    func session(_ id: Int64) async throws -> WebSession
    /// Deletes an ended session and its entries.
    func deleteSession(_ id: Int64) async throws

    /// The entries of `session` that pass `filter`, in recording order: `limit` of them after skipping `offset`;
    /// `total` counts every one that passes.
    func entries(session: Int64, filter: ActionTextFilter?, offset: Int, limit: Int) async throws -> (entries: [EntrySummary], total: Int)
    /// How many entries passing `filter` come before `sequence` in `session`, and whether it passes itself; nil if
    /// it is not in the session.
    func position(of sequence: Int64, session: Int64, filter: ActionTextFilter?) async throws -> (offset: Int, matches: Bool)?
    func entry(_ sequence: Int64) async throws -> WebEntry
    /// Names the history the entries come from, and changes when it does (another data directory, a new
    /// database): what a browser keeps of entry 7 is then never taken for another history's entry 7.
    var historyIdentity: String { get }
    /// The state, byte for byte as the app sent it.
    func state(of sequence: Int64) async throws -> ByteBuffer
    /// The PNG; empty when the entry has none.
    func screenshot(of sequence: Int64) async throws -> ByteBuffer
    /// parleyd's diff, computed off the event loops; `from` nil: the entry before `to` in its session.
    func diff(from: Int64?, to: Int64) async throws -> DebuggerControl.DiffResult
    /// Sends the entry's state to its session's app (`to` nil and `all` false), to the app `to` names, or to all.
    func replay(_ sequence: Int64, to: String?, all: Bool) async throws -> DebuggerControl.ReplayResult

    /// A session's timeline: its states, log records and spans merged by time, those `query` selects, paged by
    /// position; `total` counts every one selected.
    func timeline(_ query: TimelineQuery) async throws -> HistoryPage<TimelineItem>
    /// Where the item of `kind` with `id` is among the items `query` selects (its offset and limit aside), and
    /// whether it is selected itself (when not, the offset counts the selected items before it); nil if it is not
    /// an item of `query`'s session.
    func timelinePosition(kind: TimelineItem.Kind, id: Int64, query: TimelineQuery) async throws -> (offset: Int, matches: Bool)?
    func logRecord(_ id: Int64) async throws -> StoredLogRecord
    func span(_ id: Int64) async throws -> StoredSpan
    /// Recent traces, newest first: those with spans from `session`, or from any session when nil.
    func traces(session: Int64?, limit: Int) async throws -> [TraceSummary]
    /// Every stored span of the trace whose id is `idOrPrefix` or starts with it.
    func trace(_ idOrPrefix: String) async throws -> [StoredSpan]
    /// The newest state `session` recorded at or before `time` (the app's state when a log line was written or a
    /// span began); nil when it recorded none that early.
    func state(before time: UnixNanos, session: Int64) async throws -> EntrySummary?

    /// Writes the session in the export format, piece by piece.
    func export(session: Int64, into write: (ByteBuffer) async throws -> Void) async throws
    /// Starts reading an export file; the web layer feeds it whole lines.
    func beginImport() -> any WebHistoryImport

    func peers() async -> [WebPeer]
    /// The named action filters of the configuration, by name.
    func filters() -> [String: ActionTextFilter]
    /// What open pages hear about from now on, as it happens. The stream ends when the backend stops publishing,
    /// or when this reader has fallen so far behind that the backend dropped it (the page's EventSource reconnects
    /// and fetches afresh). The server ends its open streams itself when it stops.
    func liveEvents() -> AsyncStream<WebEvent>

    /// The metrics, in Prometheus' text exposition format.
    func metrics() async -> String

    /// The status and title for one of the backend's errors (no such session: 404, …); nil for a 500.
    func problem(for error: any Error) -> WebProblem?

    /// Connected apps' drawers (docs/drawer.md).
    func drawers() async -> [AppDrawer]
    /// Checks `value` against the app's drawer, then sets it in the app; the app's answer.
    func setDrawerValue(app: String, item: String, value: DrawerValue) async throws -> DrawerMessage.Result
    func invokeDrawerAction(app: String, item: String) async throws -> DrawerMessage.Result

    /// parleyd's device fingerprint, the devices paired with it and the pairing requests waiting (docs/security.md).
    func devices() async -> WebDevices
    /// What a person decides on a pairing request, or a paired device taken back; `device` is a fingerprint or a
    /// unique beginning of one. Returns what was done, in words.
    func decide(_ decision: WebDeviceDecision, device: String) async throws -> String
}

/// The devices of `/api/devices`.
public struct WebDevices: Codable, Sendable, Hashable {
    public var fingerprint: String
    public var paired: [Paired]
    public var pending: [Request]

    public struct Paired: Codable, Sendable, Hashable {
        public var fingerprint: String
        public var name: String
        public var pairedAt: Date
        public var lastSeen: Date?
        public var connected: Bool

        public init(fingerprint: String, name: String, pairedAt: Date, lastSeen: Date?, connected: Bool) {
            self.fingerprint = fingerprint
            self.name = name
            self.pairedAt = pairedAt
            self.lastSeen = lastSeen
            self.connected = connected
        }
    }

    public struct Request: Codable, Sendable, Hashable {
        public var fingerprint: String
        public var name: String
        public var address: String
        /// The six digits, as `123 456`.
        public var code: String
        public var requestedAt: Date
        public var attempts: Int

        public init(fingerprint: String, name: String, address: String, code: String, requestedAt: Date, attempts: Int) {
            self.fingerprint = fingerprint
            self.name = name
            self.address = address
            self.code = code
            self.requestedAt = requestedAt
            self.attempts = attempts
        }
    }

    public init(fingerprint: String, paired: [Paired], pending: [Request]) {
        self.fingerprint = fingerprint
        self.paired = paired
        self.pending = pending
    }
}

public enum WebDeviceDecision: String, Sendable, Hashable {
    case accept, refuse, unpair
}

/// An import in progress: whole lines of an export file in order, then ``finish()``.
public protocol WebHistoryImport: Sendable {
    func add(lines: ByteBuffer) async throws
    func finish() async throws -> (session: SessionSummary, alreadyInHistory: Bool)
}

/// A session as the web debugger lists it: the stored summary and whether its app is connected now.
public struct WebSession: Sendable, Hashable, Encodable {
    public var summary: SessionSummary
    /// Its app is connected and records into it.
    public var live: Bool

    public init(summary: SessionSummary, live: Bool) {
        self.summary = summary
        self.live = live
    }

    private enum CodingKeys: String, CodingKey { case live }

    /// The summary's fields and `live`, in one object.
    public func encode(to encoder: any Encoder) throws {
        try summary.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(live, forKey: .live)
    }
}

/// An entry with its neighbours in the session, for the previous/next buttons and keys.
public struct WebEntry: Sendable, Hashable, Encodable {
    public var entry: EntrySummary
    public var previous: Int64?
    public var next: Int64?

    public init(entry: EntrySummary, previous: Int64?, next: Int64?) {
        self.entry = entry
        self.previous = previous
        self.next = next
    }

    private enum CodingKeys: String, CodingKey { case entry, previous, next }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(entry, forKey: .entry)
        // Explicit nulls: a reader can tell "first entry" from "field missing".
        try container.encode(previous, forKey: .previous)
        try container.encode(next, forKey: .next)
    }
}

/// A peer, connected or only discovered.
public struct WebPeer: Sendable, Hashable, Codable {
    public var name: String
    public var id: String
    public var address: String
    public var addresses: [String]
    /// `parley`, or `original` for an app in the original debugger framing.
    public var kind: String
    public var connected: Bool
    /// ISO 8601; nil when not connected.
    public var connectedAt: String?
    public var accepts: [String]
    /// It proved the shared secret (false for every peer when parleyd runs open).
    public var authenticated: Bool
    public var messagesIn: Int
    public var messagesOut: Int

    public init(
        name: String, id: String, address: String, addresses: [String], kind: String, connected: Bool, connectedAt: String?,
        accepts: [String], authenticated: Bool, messagesIn: Int, messagesOut: Int
    ) {
        self.name = name
        self.id = id
        self.address = address
        self.addresses = addresses
        self.kind = kind
        self.connected = connected
        self.connectedAt = connectedAt
        self.accepts = accepts
        self.authenticated = authenticated
        self.messagesIn = messagesIn
        self.messagesOut = messagesOut
    }

    /// Every key, always: `connectedAt` is `null` for a peer discovered but not connected (docs/web.md).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .name)
        try container.encode(id, forKey: .id)
        try container.encode(address, forKey: .address)
        try container.encode(addresses, forKey: .addresses)
        try container.encode(kind, forKey: .kind)
        try container.encode(connected, forKey: .connected)
        try container.encode(connectedAt, forKey: .connectedAt)
        try container.encode(accepts, forKey: .accepts)
        try container.encode(authenticated, forKey: .authenticated)
        try container.encode(messagesIn, forKey: .messagesIn)
        try container.encode(messagesOut, forKey: .messagesOut)
    }
}
