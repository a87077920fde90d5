import NIOCore

/// A bounded FIFO that makes room by dropping its oldest element. Appending and removing are O(1): the storage is
/// allocated once, at full capacity, so `write` never allocates or copies the queue.
struct RecordQueue<Element> {
    let capacity: Int
    private var storage: CircularBuffer<Element>

    init(capacity: Int) {
        self.capacity = max(1, capacity)
        self.storage = CircularBuffer(initialCapacity: self.capacity)
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

    /// Empties the queue; returns how many elements it held.
    mutating func removeAll() -> Int {
        defer { storage.removeAll(keepingCapacity: false) }
        return storage.count
    }
}
