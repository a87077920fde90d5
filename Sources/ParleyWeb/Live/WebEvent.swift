import ParleyDebugger
import ParleyDrawer

/// What open pages hear about as it happens, as the backend hands it over (``WebDebuggerBackend/liveEvents()``).
public enum WebEvent: Sendable, Hashable {
    /// An entry parleyd has just stored.
    case entry(EntrySummary)
    case sessionStarted(WebSession)
    case sessionEnded(WebSession)
    case sessionDeleted(id: Int64)
    /// The set of peers changed; pages fetch `/api/peers` again.
    case peersChanged
    /// An app's drawer was declared or changed, or went away (no items).
    case drawer(AppDrawer)
}
