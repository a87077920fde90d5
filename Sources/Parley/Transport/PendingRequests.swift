import NIOCore
import ParleyWire
import Synchronization

/// The requests of one transceiver that wait for their replies, and the counter that numbers its messages.
///
/// Kept per peer rather than per connection: when two peers dialled each other at once and one connection is
/// retired as a duplicate, a request sent on it is answered on the connection that is kept. Ids come from one
/// counter for all connections, so a reply's id names one request whichever connection brings it.
///
/// Deadlines share one timer: a request costs no timer of its own to schedule on the event loop, and none to
/// cancel when its reply comes (two crossings to the loop per round trip, each a wake-up when the loop sleeps).
/// The timer is armed for the earliest deadline; when it fires it fails what is due and re-arms for the next.
final class PendingRequests: Sendable {
    private struct Pending {
        var slot: ReplySlot
        var deadline: NIODeadline
    }

    private struct State {
        var slots: [PeerID: [MessageID: Pending]] = [:]
        /// When the earliest timer that is armed fires; nil when none is.
        var timer: NIODeadline?
    }

    private let state = Mutex(State())
    private let lastID = Atomic<UInt64>(0)

    /// Requests waiting for their replies.
    var count: Int { state.withLock { $0.slots.values.reduce(0) { $0 + $1.count } } }

    func makeMessageID() -> MessageID {
        MessageID(lastID.add(1, ordering: .relaxed).newValue)
    }

    /// Where the reply to `id`, sent to `peer`, will land; at `deadline` it fails with ``TimeoutExpired`` (a timer
    /// on `loop`, unless one that fires earlier is already armed).
    func register(_ id: MessageID, to peer: PeerID, deadline: NIODeadline, timerOn loop: any EventLoop) -> ReplySlot {
        let slot = ReplySlot()
        let arm = state.withLock { state -> Bool in
            state.slots[peer, default: [:]][id] = Pending(slot: slot, deadline: deadline)
            if let armed = state.timer, armed <= deadline { return false }
            state.timer = deadline
            return true
        }
        if arm { schedule(at: deadline, on: loop) }
        return slot
    }

    private func schedule(at deadline: NIODeadline, on loop: any EventLoop) {
        loop.scheduleTask(deadline: deadline) { self.expire(on: loop) }
    }

    /// Fails the requests whose deadline has passed and arms the timer for the next deadline.
    private func expire(on loop: any EventLoop) {
        let now = loop.now
        let (due, next) = state.withLock { state -> ([ReplySlot], NIODeadline?) in
            var due: [ReplySlot] = []
            var next: NIODeadline?
            for (peer, requests) in state.slots {
                var waiting = requests
                for (id, pending) in requests {
                    if pending.deadline <= now {
                        due.append(pending.slot)
                        waiting[id] = nil
                    } else if next.map({ pending.deadline < $0 }) ?? true {
                        next = pending.deadline
                    }
                }
                state.slots[peer] = waiting.isEmpty ? nil : waiting
            }
            state.timer = next
            return (due, next)
        }
        for slot in due { slot.fulfill(.failure(TimeoutExpired())) }
        if let next { schedule(at: next, on: loop) }
    }

    func remove(_ id: MessageID, to peer: PeerID) {
        state.withLock { state in
            state.slots[peer]?[id] = nil
            if state.slots[peer]?.isEmpty == true { state.slots[peer] = nil }
        }
    }

    /// Completes the request `id` sent to `peer` if it is still outstanding; false for a reply nobody waits for.
    func resolve(_ id: MessageID, from peer: PeerID, with result: Result<PeerConnection.Reply, any Error>) -> Bool {
        let slot = state.withLock { state -> ReplySlot? in
            guard let pending = state.slots[peer]?.removeValue(forKey: id) else { return nil }
            if state.slots[peer]?.isEmpty == true { state.slots[peer] = nil }
            return pending.slot
        }
        slot?.fulfill(result)
        return slot != nil
    }

    /// Fails every request outstanding with `peer`: it is gone.
    func failAll(to peer: PeerID, with error: any Error) {
        let waiting = state.withLock { $0.slots.removeValue(forKey: peer) ?? [:] }
        for pending in waiting.values { pending.slot.fulfill(.failure(error)) }
    }
}
