import NIOCore
import ParleyWire
import Synchronization

/// The requests of one transceiver that wait for their replies, and the counter that numbers its messages.
///
/// Kept per peer rather than per connection: when two peers dialled each other at once and one connection is
/// retired as a duplicate, a request sent on it is answered on the connection that is kept. Ids come from one
/// counter for all connections, so a reply's id names one request whichever connection brings it; the table is
/// keyed by the id alone (a word to hash, where a peer id is a 36-character string), and a reply counts only
/// from the peer the request went to.
///
/// Deadlines share one timer: a request costs no timer of its own to schedule on the event loop, and none to
/// cancel when its reply comes (two crossings to the loop per round trip, each a wake-up when the loop sleeps).
/// The timer is armed for the earliest deadline; when it fires it fails what is due and re-arms for the next. A
/// request due sooner than the armed timer arms a new one; the one it replaces does nothing when it fires, so
/// there is one chain of timers however the deadlines arrive.
final class PendingRequests: Sendable {
    private struct Pending {
        var peer: PeerID
        var slot: ReplySlot
        var deadline: NIODeadline
    }

    private struct Timer {
        var deadline: NIODeadline
        /// Which arming this is: a timer that fires with another number was replaced, and does nothing.
        var generation: UInt64
    }

    private struct State {
        var slots: [MessageID: Pending] = [:]
        /// The timer that counts (earlier ones were replaced); nil when none is armed.
        var timer: Timer?
        var generations: UInt64 = 0

        mutating func arm(at deadline: NIODeadline) -> Timer {
            generations &+= 1
            let timer = Timer(deadline: deadline, generation: generations)
            self.timer = timer
            return timer
        }

        /// Takes out the requests `leaving` picks; their slots, to fail once out of the lock.
        mutating func take(where leaving: (Pending) -> Bool) -> [ReplySlot] {
            var taken: [ReplySlot] = []
            slots = slots.filter { _, pending in
                guard leaving(pending) else { return true }
                taken.append(pending.slot)
                return false
            }
            return taken
        }
    }

    private let state = Mutex(State())
    private let lastID = Atomic<UInt64>(0)

    /// Requests waiting for their replies.
    var count: Int { state.withLock { $0.slots.count } }

    func makeMessageID() -> MessageID {
        MessageID(lastID.add(1, ordering: .relaxed).newValue)
    }

    /// Where the reply to `id`, sent to `peer`, will land; at `deadline` it fails with ``TimeoutExpired`` (a timer
    /// on `loop`, unless one that fires earlier is already armed).
    func register(_ id: MessageID, to peer: PeerID, deadline: NIODeadline, timerOn loop: any EventLoop) -> ReplySlot {
        let slot = ReplySlot()
        let timer = state.withLock { state -> Timer? in
            state.slots[id] = Pending(peer: peer, slot: slot, deadline: deadline)
            if let armed = state.timer, armed.deadline <= deadline { return nil }
            return state.arm(at: deadline)
        }
        if let timer { schedule(timer, on: loop) }
        return slot
    }

    private func schedule(_ timer: Timer, on loop: any EventLoop) {
        loop.scheduleTask(deadline: timer.deadline) { self.expire(timer, on: loop) }
    }

    /// Fails the requests whose deadline has passed and arms the timer for the next deadline; nothing if `fired`
    /// was replaced by a timer due sooner.
    private func expire(_ fired: Timer, on loop: any EventLoop) {
        let now = loop.now
        let (due, next) = state.withLock { state -> ([ReplySlot], Timer?) in
            guard state.timer?.generation == fired.generation else { return ([], nil) }
            let due = state.take { $0.deadline <= now }
            state.timer = nil
            return (due, state.slots.values.lazy.map(\.deadline).min().map { state.arm(at: $0) })
        }
        for slot in due { slot.fulfill(.failure(TimeoutExpired())) }
        if let next { schedule(next, on: loop) }
    }

    /// Forgets request `id`: its caller gave up (an answer, a timeout or the peer's leaving takes it out itself).
    func remove(_ id: MessageID) {
        state.withLock { _ = $0.slots.removeValue(forKey: id) }
    }

    /// Completes the request `id` sent to `peer` if it is still outstanding; false for a reply nobody waits for.
    func resolve(_ id: MessageID, from peer: PeerID, with result: Result<PeerConnection.Reply, any Error>) -> Bool {
        let slot = state.withLock { state -> ReplySlot? in
            // Another peer cannot answer it (nor, by guessing ids, fail it).
            guard let pending = state.slots[id], pending.peer == peer else { return nil }
            state.slots[id] = nil
            return pending.slot
        }
        slot?.fulfill(result)
        return slot != nil
    }

    /// Fails every request outstanding with `peer`: it is gone.
    func failAll(to peer: PeerID, with error: any Error) {
        let gone = state.withLock { $0.take { $0.peer == peer } }
        for slot in gone { slot.fulfill(.failure(error)) }
    }
}
