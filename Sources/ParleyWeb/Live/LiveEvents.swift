import NIOCore
import ParleyDebugger
import ParleyDrawer
import Synchronization

/// What open pages hear about as it happens.
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

/// Hands every ``WebEvent`` to every open live stream. Publishing never waits: a stream whose reader has fallen
/// ``bufferLimit`` events behind is ended (the browser's EventSource reconnects and the page fetches afresh), so
/// a slow page can neither hold up the app that records nor make parleyd buffer without bound.
public final class LiveEvents: Sendable {
    public static let bufferLimit = 1024

    private struct State {
        var subscribers: [Int: AsyncStream<WebEvent>.Continuation] = [:]
        var nextID = 0
        var closed = false
    }

    private let state = Mutex(State())

    public init() {}

    /// A new stream of every event published from now on.
    public func subscribe() -> AsyncStream<WebEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: WebEvent.self, bufferingPolicy: .bufferingOldest(Self.bufferLimit))
        let id: Int? = state.withLock { state in
            guard !state.closed else { return nil }
            defer { state.nextID += 1 }
            state.subscribers[state.nextID] = continuation
            return state.nextID
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in self?.remove(id) }
        return stream
    }

    public func publish(_ event: WebEvent) {
        let subscribers = state.withLock { Array($0.subscribers) }
        for (id, continuation) in subscribers {
            if case .dropped = continuation.yield(event) {
                continuation.finish()
                remove(id)
            }
        }
    }

    /// Ends every stream and refuses new ones (parleyd is stopping: open streams must not hold up the shutdown).
    public func close() {
        let subscribers = state.withLock { state in
            state.closed = true
            defer { state.subscribers.removeAll() }
            return Array(state.subscribers.values)
        }
        for continuation in subscribers { continuation.finish() }
    }

    var subscriberCount: Int { state.withLock { $0.subscribers.count } }

    private func remove(_ id: Int) {
        _ = state.withLock { $0.subscribers.removeValue(forKey: id) }
    }
}
