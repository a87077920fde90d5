import ParleyDebugger
import ParleyDrawer

/// What open pages hear about as it happens, as the backend hands it over (``WebDebuggerBackend/liveEvents()``).
public enum WebEvent: Sendable, Hashable {
    /// An entry parleyd has just stored.
    case entry(EntrySummary)
    /// Log records and spans parleyd has just stored, from one app's batch.
    case telemetry(WebTelemetry)
    case sessionStarted(WebSession)
    case sessionEnded(WebSession)
    case sessionDeleted(id: Int64)
    /// The set of peers changed; pages fetch `/api/peers` again.
    case peersChanged
    /// An app's drawer was declared or changed, or went away (no items).
    case drawer(AppDrawer)
}

/// Log records and spans of one session, stored together.
public struct WebTelemetry: Sendable, Hashable {
    public var session: Int64
    public var logs: [StoredLogRecord]
    public var spans: [StoredSpan]

    public init(session: Int64, logs: [StoredLogRecord], spans: [StoredSpan]) {
        self.session = session
        self.logs = logs
        self.spans = spans
    }

    /// The most records an event carries itself. A bigger batch is announced by its counts alone and the page
    /// fetches what it shows: an app logging in floods would otherwise have every record encoded for the pages.
    public static let itemsSentLive = 200
}
