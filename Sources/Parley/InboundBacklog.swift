import Synchronization

/// Messages received from one peer and waiting for their handlers, in arrival order.
///
/// The reader puts, the handler loop takes. Keeping them apart means replies, pings and close frames are
/// still read while a handler is busy (a handler may itself await a reply from the same peer). The backlog
/// is bounded in bytes: above the limit `put` waits, which stops reading from the socket and lets TCP push
/// back on the sender.
final class InboundBacklog<Element: Sendable>: Sendable {
    private struct State {
        var items: [(Element, Int)] = []
        var head = 0
        var bytes = 0
        var finished = false
        var taker: CheckedContinuation<Element?, Never>?
        var putter: CheckedContinuation<Void, Never>?
    }

    private let limit: Int
    private let state = Mutex(State())

    init(limit: Int) { self.limit = limit }

    /// Adds an element of `size` bytes; waits while the backlog is over its limit (unless it is empty, so a
    /// single message larger than the limit still passes).
    func put(_ element: Element, size: Int) async {
        while true {
            let mustWait = state.withLock { state -> Bool in
                state.bytes >= limit && state.bytes > 0 && !state.finished
            }
            if !mustWait { break }
            await withCheckedContinuation { continuation in
                let resumeNow = state.withLock { state -> Bool in
                    guard state.bytes >= limit, !state.finished else { return true }
                    state.putter = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        }
        let taker = state.withLock { state -> CheckedContinuation<Element?, Never>? in
            if let taker = state.taker {
                state.taker = nil
                return taker
            }
            state.items.append((element, size))
            state.bytes += size
            return nil
        }
        taker?.resume(returning: element)
    }

    /// The next element, or nil once the backlog is finished and empty.
    func take() async -> Element? {
        await withCheckedContinuation { continuation in
            let (result, putter): (Element??, CheckedContinuation<Void, Never>?) = state.withLock { state in
                if state.head < state.items.count {
                    let (element, size) = state.items[state.head]
                    state.head += 1
                    state.bytes -= size
                    if state.head == state.items.count {
                        state.items.removeAll(keepingCapacity: true)
                        state.head = 0
                    }
                    var putter: CheckedContinuation<Void, Never>?
                    if state.bytes < limit {
                        putter = state.putter
                        state.putter = nil
                    }
                    return (.some(element), putter)
                }
                if state.finished { return (.some(nil), nil) }
                state.taker = continuation
                return (nil, nil)
            }
            putter?.resume()
            if let result { continuation.resume(returning: result) }
        }
    }

    /// No more puts; takes drain what is left and then return nil.
    func finish() {
        let (taker, putter) = state.withLock { state in
            state.finished = true
            defer {
                state.taker = nil
                state.putter = nil
            }
            return (state.taker, state.putter)
        }
        taker?.resume(returning: nil)
        putter?.resume()
    }
}
