import Synchronization

/// Work done in order per key, a few items at a time: while an app's batch is stored, its next one is decoded.
///
/// Each item starts once the one added before it under the same key has finished; ``add(_:_:)`` returns once at
/// most ``depth`` items of the key are unfinished, so that a connection sending faster than parleyd stores waits
/// in its read loop (the transceiver's backpressure) instead of queueing without bound; ``append(_:_:)`` adds a
/// last item (a connection's end) without waiting. The items are tasks of their own, not children of the handler
/// that added them: the handler must return for the connection's next message to be read and decoded meanwhile.
/// ``drainAll()`` waits for everyone's items (before the forwarder and the store stop), ``drain(_:)`` for one key's.
final class OrderedLanes<Key: Hashable & Sendable>: Sendable {
    private struct Lane {
        var generation = 0
        var unfinished: [Task<Void, Never>] = []
    }

    let depth: Int
    private let lanes = Mutex<[Key: Lane]>([:])

    init(depth: Int) {
        precondition(depth >= 1, "a lane holds at least the item being done")
        self.depth = depth
    }

    /// Adds `work` behind what `key` has; returns once at most ``depth`` of the key's items are unfinished.
    func add(_ key: Key, _ work: @escaping @Sendable () async -> Void) async {
        await enqueue(key, work, bounded: true)?.value
    }

    /// Adds `work` behind what `key` has, and returns at once: for a last item (a connection's end), which must
    /// follow the others without holding up whoever adds it.
    func append(_ key: Key, _ work: @escaping @Sendable () async -> Void) {
        _ = enqueue(key, work, bounded: false)
    }

    /// Adds the item; past ``depth`` (when bounded), the key's oldest unfinished item, for the caller to wait for.
    private func enqueue(_ key: Key, _ work: @escaping @Sendable () async -> Void, bounded: Bool) -> Task<Void, Never>? {
        lanes.withLock { lanes -> Task<Void, Never>? in
            var lane = lanes[key, default: Lane()]
            let previous = lane.unfinished.last
            lane.generation += 1
            let generation = lane.generation
            lane.unfinished.append(
                Task {
                    await previous?.value
                    await work()
                    self.finished(key, generation)
                })
            let oldest = bounded && lane.unfinished.count > depth ? lane.unfinished.removeFirst() : nil
            lanes[key] = lane
            return oldest
        }
    }

    /// Waits until everything added under `key` so far is done, the lane gone with it.
    func drain(_ key: Key) async {
        await lanes.withLock { $0[key]?.unfinished.last }?.value
    }

    /// Waits until everything added under any key so far is done.
    func drainAll() async {
        for last in lanes.withLock({ $0.values.compactMap(\.unfinished.last) }) { await last.value }
    }

    /// Number of keys with unfinished items.
    var busyKeys: Int { lanes.withLock { $0.count } }

    /// The lane's newest item is done, and with it every item of the lane: the lane goes.
    private func finished(_ key: Key, _ generation: Int) {
        lanes.withLock { lanes in
            if lanes[key]?.generation == generation { lanes[key] = nil }
        }
    }
}
