import ParleyDebugger
import ParleyDrawer
import Synchronization

/// What happens in parleyd that a watcher hears about as it happens (the web debugger's open pages, through
/// ``DaemonWebBackend``).
enum DaemonEvent: Sendable, Hashable {
    /// An entry the history has just stored.
    case entry(EntrySummary)
    /// Log records and spans the history has just stored in one session, from one batch of its app.
    case telemetry(session: Int64, logs: [StoredLogRecord], spans: [StoredSpan])
    /// An app connected and records into this new session.
    case sessionStarted(SessionSummary)
    /// A session's app went away, or an import finished.
    case sessionEnded(SessionSummary)
    case sessionDeleted(id: Int64)
    /// A peer connected, went away or was discovered.
    case peersChanged
    /// An app's drawer was declared or changed, or went away (no items).
    case drawer(AppDrawer)
}

/// Hands every ``DaemonEvent`` to every subscriber. Publishing never waits: a subscriber that has fallen
/// ``bufferLimit`` events behind has its stream ended (it subscribes again and reads afresh), so a slow watcher
/// can neither hold up the app that records nor make parleyd buffer without bound.
final class DaemonEvents: Sendable {
    static let bufferLimit = 1024

    /// One subscriber's stream, behind the closure that translates each event for it (nil: not one for it).
    private struct Subscriber: Sendable {
        /// False once the subscriber's buffer is full (the event was dropped).
        let deliver: @Sendable (DaemonEvent) -> Bool
        let finish: @Sendable () -> Void
    }

    private struct State {
        var subscribers: [Int: Subscriber] = [:]
        var nextID = 0
    }

    private let state = Mutex(State())

    init() {}

    /// A new stream of every event published from now on, each as `translate` makes it (the web layer's own event
    /// type, for one), but those it translates to nil: the translation happens as it is published, so the stream
    /// buffers what its reader reads.
    func subscribe<Event: Sendable>(_ translate: @escaping @Sendable (DaemonEvent) -> Event?) -> AsyncStream<Event> {
        let (stream, continuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .bufferingOldest(Self.bufferLimit))
        let subscriber = Subscriber(
            deliver: { event in
                guard let translated = translate(event) else { return true }
                if case .dropped = continuation.yield(translated) { return false }
                return true
            },
            finish: { continuation.finish() }
        )
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            state.subscribers[state.nextID] = subscriber
            return state.nextID
        }
        continuation.onTermination = { [weak self] _ in self?.remove(id) }
        return stream
    }

    func subscribe() -> AsyncStream<DaemonEvent> { subscribe { $0 } }

    func publish(_ event: DaemonEvent) {
        let subscribers = state.withLock { Array($0.subscribers) }
        for (id, subscriber) in subscribers where !subscriber.deliver(event) {
            subscriber.finish()
            remove(id)
        }
    }

    var subscriberCount: Int { state.withLock { $0.subscribers.count } }

    private func remove(_ id: Int) {
        _ = state.withLock { $0.subscribers.removeValue(forKey: id) }
    }
}
