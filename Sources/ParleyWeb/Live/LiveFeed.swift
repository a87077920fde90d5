import NIOCore
import Synchronization

/// The live events for every open page: one subscription to the backend, each event encoded once as server-sent
/// event bytes and handed to every page (the bytes are shared, not copied), each page with a backlog bounded in
/// events and bytes. A page that falls that far behind is ended (it reconnects and fetches afresh, as after any
/// lost stream); past ``Limits/pages`` open pages, a new one is refused.
///
/// The subscription starts with the first page and ends with the backend's events (parleyd stopping, or the feed
/// itself falling behind the backend): every page is ended then, and the next one starts a new subscription.
final class LiveFeed: Sendable {
    struct Limits: Sendable {
        /// Open live streams at most.
        var pages = 64
        /// Events waiting for one page at most.
        var backlogEvents = 1024
        /// Bytes waiting for one page at most.
        var backlogBytes = 8 << 20
    }

    let limits: Limits
    private let events: @Sendable () -> AsyncStream<WebEvent>
    private let state = Mutex(State())

    private struct State {
        var pages: [Int: LivePage] = [:]
        var nextID = 0
        var closed = false
        var subscription: Task<Void, Never>?
    }

    init(limits: Limits = Limits(), events: @escaping @Sendable () -> AsyncStream<WebEvent>) {
        self.limits = limits
        self.events = events
    }

    /// A page's stream; nil when ``Limits/pages`` are open, or the feed is closed.
    func open() -> LivePage? {
        let (page, subscribe) = state.withLock { state -> (LivePage?, Bool) in
            guard !state.closed, state.pages.count < limits.pages else { return (nil, false) }
            defer { state.nextID += 1 }
            let page = LivePage(id: state.nextID, limits: limits)
            state.pages[page.id] = page
            return (page, state.subscription == nil)
        }
        if subscribe { startSubscription() }
        return page
    }

    /// The page has gone (its request ended).
    func remove(_ page: LivePage) {
        page.finish()
        _ = state.withLock { $0.pages.removeValue(forKey: page.id) }
    }

    /// Ends every page, and refuses new ones (the server is stopping).
    func close() {
        let (pages, subscription) = state.withLock { state in
            state.closed = true
            defer {
                state.pages.removeAll()
                state.subscription = nil
            }
            return (Array(state.pages.values), state.subscription)
        }
        subscription?.cancel()
        for page in pages { page.finish() }
    }

    var count: Int { state.withLock { $0.pages.count } }

    private func startSubscription() {
        let events = self.events
        let task = Task { [weak self] in
            for await event in events() {
                guard let self else { return }
                guard let bytes = try? event.serverSentEvent() else { continue }
                self.publish(bytes)
            }
            self?.subscriptionEnded()
        }
        let redundant = state.withLock { state -> Bool in
            guard state.subscription == nil, !state.closed else { return true }
            state.subscription = task
            return false
        }
        if redundant { task.cancel() }
    }

    private func publish(_ bytes: ByteBuffer) {
        let pages = state.withLock { Array($0.pages.values) }
        for page in pages where !page.offer(bytes) {
            _ = state.withLock { $0.pages.removeValue(forKey: page.id) }
        }
    }

    private func subscriptionEnded() {
        let pages = state.withLock { state in
            state.subscription = nil
            defer { state.pages.removeAll() }
            return Array(state.pages.values)
        }
        for page in pages { page.finish() }
    }
}

/// One open page's live stream: what waits to be written to it, bounded (see ``LiveFeed``).
final class LivePage: Sendable {
    let id: Int
    private let limits: LiveFeed.Limits
    private let state = Mutex(State())

    private struct State {
        var waiting = CircularBuffer<ByteBuffer>()
        var bytes = 0
        var ended = false
        var reader: CheckedContinuation<ByteBuffer?, Never>?
    }

    init(id: Int, limits: LiveFeed.Limits) {
        self.id = id
        self.limits = limits
    }

    /// Queues `bytes` for the page; false once the page has ended, by falling behind now or before.
    @discardableResult
    func offer(_ bytes: ByteBuffer) -> Bool {
        let (accepted, reader) = state.withLock { state -> (Bool, CheckedContinuation<ByteBuffer?, Never>?) in
            guard !state.ended else { return (false, nil) }
            if let reader = state.reader {
                state.reader = nil
                return (true, reader)
            }
            guard state.waiting.count < limits.backlogEvents, state.bytes + bytes.readableBytes <= limits.backlogBytes else {
                state.ended = true
                state.waiting.removeAll()
                state.bytes = 0
                return (false, nil)
            }
            state.waiting.append(bytes)
            state.bytes += bytes.readableBytes
            return (true, nil)
        }
        reader?.resume(returning: bytes)
        return accepted
    }

    /// The next bytes to write; nil once the page has ended (what was waiting is dropped when it fell behind, and
    /// written first when the feed ended normally).
    func next() async -> ByteBuffer? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (reader: CheckedContinuation<ByteBuffer?, Never>) in
                let taken = state.withLock { state -> ByteBuffer?? in
                    if let first = state.waiting.popFirst() {
                        state.bytes -= first.readableBytes
                        return .some(first)
                    }
                    if state.ended { return .some(nil) }
                    state.reader = reader
                    return .none
                }
                if let taken { reader.resume(returning: taken) }
            }
        } onCancel: {
            finish()
        }
    }

    /// Ends the page after what is waiting.
    func finish() {
        let reader = state.withLock { state in
            state.ended = true
            defer { state.reader = nil }
            return state.reader
        }
        reader?.resume(returning: nil)
    }
}
