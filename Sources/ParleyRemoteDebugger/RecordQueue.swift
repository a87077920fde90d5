import NIOCore

/// A bounded FIFO that makes room by dropping its oldest element. Appending and removing are O(1): by default the
/// storage is allocated once, at full capacity, so `write` never allocates or copies the queue. A large queue that
/// is mostly empty (the telemetry exporter's 10 000 records) reserves less and grows by doubling, amortised O(1).
struct RecordQueue<Element> {
    let capacity: Int
    private var storage: CircularBuffer<Element>

    init(capacity: Int, reserving reserved: Int? = nil) {
        self.capacity = max(1, capacity)
        self.storage = CircularBuffer(initialCapacity: min(self.capacity, max(1, reserved ?? self.capacity)))
    }

    var count: Int { storage.count }
    var isEmpty: Bool { storage.isEmpty }

    /// Appends `element`; returns whether the oldest element was dropped to make room.
    mutating func append(_ element: Element) -> Bool {
        var dropped = false
        if storage.count >= capacity {
            storage.removeFirst()
            dropped = true
        }
        storage.append(element)
        return dropped
    }

    mutating func popFirst() -> Element? {
        storage.popFirst()
    }

    /// Removes and returns up to `count` of the oldest elements, oldest first.
    mutating func popFirst(upTo count: Int) -> [Element] {
        let taken = Swift.min(count, storage.count)
        guard taken > 0 else { return [] }
        var elements: [Element] = []
        elements.reserveCapacity(taken)
        for _ in 0..<taken { elements.append(storage.removeFirst()) }
        return elements
    }

    /// The elements, oldest first, without removing them.
    var elements: [Element] { Array(storage) }

    /// Empties the queue; returns how many elements it held.
    mutating func removeAll() -> Int {
        defer { storage.removeAll(keepingCapacity: false) }
        return storage.count
    }
}
