@testable import ParleyDaemon
import ParleyTestSupport
import Synchronization
import Testing

@Suite("OrderedLanes: work in order per key, a few items at a time")
struct OrderedLanesTests {
    /// What happened, in the order it happened.
    final class Journal: Sendable {
        private let lines = Mutex<[String]>([])
        func note(_ line: String) { lines.withLock { $0.append(line) } }
        var all: [String] { lines.withLock { $0 } }
    }

    @Test("each key's items run one after another in the order added, however long each takes; keys do not wait for each other")
    func order() async {
        let lanes = OrderedLanes<Int>(depth: 2)
        let journal = Journal()
        let slow = Latch()
        // Key 1's first item waits at the gate: its later items wait behind it, key 2's go on.
        await lanes.add(1) {
            try? await slow.wait()
            journal.note("1.0")
        }
        for item in 1...3 {
            await lanes.add(2) {
                for _ in 0..<(3 - item) { await Task.yield() }
                journal.note("2.\(item)")
            }
        }
        await lanes.drain(2)
        #expect(journal.all == ["2.1", "2.2", "2.3"], "key 2 done while key 1's first item is still waiting")
        #expect(lanes.busyKeys == 1)
        await lanes.add(1) { journal.note("1.1") }
        // A last item appended does not wait for the lane, and still runs after everything in it.
        lanes.append(1) { journal.note("1.end") }
        journal.note("appended")
        slow.open()
        await lanes.drainAll()
        #expect(journal.all == ["2.1", "2.2", "2.3", "appended", "1.0", "1.1", "1.end"])
        #expect(lanes.busyKeys == 0, "a lane whose items are all done goes")
    }

    @Test("adding returns at once while fewer than depth items are unfinished, and past that only once the oldest is done")
    func backpressure() async {
        let lanes = OrderedLanes<Int>(depth: 2)
        let journal = Journal()
        let gate = Latch()
        await lanes.add(7) {
            try? await gate.wait()
            journal.note("first done")
        }
        await lanes.add(7) { journal.note("second done") }
        journal.note("two added")
        async let third: Void = lanes.add(7) { journal.note("third done") }
        gate.open()
        await third
        journal.note("third added")
        await lanes.drain(7)
        let lines = journal.all
        #expect(lines.first == "two added", "neither the first nor the second add waited for the gate: \(lines)")
        let firstDone = lines.firstIndex(of: "first done") ?? .max
        let thirdAdded = lines.firstIndex(of: "third added") ?? -1
        #expect(firstDone < thirdAdded, "the third add waited for the oldest item: \(lines)")
        #expect(lines.filter { $0.hasSuffix("done") } == ["first done", "second done", "third done"])
    }
}
