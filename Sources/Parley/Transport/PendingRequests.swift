import ParleyWire
import Synchronization

/// The requests of one transceiver that wait for their replies, and the counter that numbers its messages.
///
/// Kept per peer rather than per connection: when two peers dialled each other at once and one connection is
/// retired as a duplicate, a request sent on it is answered on the connection that is kept. Ids come from one
/// counter for all connections, so a reply's id names one request whichever connection brings it.
final class PendingRequests: Sendable {
    private let slots = Mutex<[PeerID: [MessageID: ReplySlot]]>([:])
    private let lastID = Atomic<UInt64>(0)

    func makeMessageID() -> MessageID {
        MessageID(lastID.add(1, ordering: .relaxed).newValue)
    }

    /// Where the reply to `id`, sent to `peer`, will land.
    func register(_ id: MessageID, to peer: PeerID) -> ReplySlot {
        let slot = ReplySlot()
        slots.withLock { $0[peer, default: [:]][id] = slot }
        return slot
    }

    func remove(_ id: MessageID, to peer: PeerID) {
        slots.withLock { slots in
            slots[peer]?[id] = nil
            if slots[peer]?.isEmpty == true { slots[peer] = nil }
        }
    }

    /// Completes the request `id` sent to `peer` if it is still outstanding; false for a reply nobody waits for.
    func resolve(_ id: MessageID, from peer: PeerID, with result: Result<PeerConnection.Reply, any Error>) -> Bool {
        let slot = slots.withLock { slots -> ReplySlot? in
            guard let slot = slots[peer]?.removeValue(forKey: id) else { return nil }
            if slots[peer]?.isEmpty == true { slots[peer] = nil }
            return slot
        }
        slot?.fulfill(result)
        return slot != nil
    }

    /// Fails every request outstanding with `peer`: it is gone.
    func failAll(to peer: PeerID, with error: any Error) {
        let waiting = slots.withLock { $0.removeValue(forKey: peer) ?? [:] }
        for slot in waiting.values { slot.fulfill(.failure(error)) }
    }
}
