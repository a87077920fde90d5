import Testing

@testable import ParleyDaemon

@Suite("Daemon events")
struct DaemonEventsTests {
    @Test("a subscriber that falls 1024 events behind is dropped, and one that keeps up keeps its stream")
    func slowSubscriberDropped() async {
        let events = DaemonEvents()
        let slow = events.subscribe()
        var fast = events.subscribe().makeAsyncIterator()
        // The fast reader takes each event before the next is published; the slow one takes none.
        for _ in 0...DaemonEvents.bufferLimit {
            events.publish(.peersChanged)
            #expect(await fast.next() == .peersChanged)
        }
        #expect(events.subscriberCount == 1)
        var received = 0
        for await _ in slow { received += 1 }
        // Ended after what it had buffered.
        #expect(received == DaemonEvents.bufferLimit)
        events.publish(.sessionDeleted(id: 1))
        #expect(await fast.next() == .sessionDeleted(id: 1))
    }

    @Test("each subscriber gets every event in its own translation, and leaves the list when its stream ends")
    func translated() async {
        let events = DaemonEvents()
        var names = events.subscribe { event -> String in
            if case .sessionDeleted(let id) = event { return "deleted \(id)" }
            return "other"
        }.makeAsyncIterator()
        let plain = events.subscribe()
        #expect(events.subscriberCount == 2)
        events.publish(.sessionDeleted(id: 4))
        events.publish(.peersChanged)
        #expect(await names.next() == "deleted 4")
        #expect(await names.next() == "other")
        let reader = Task { for await _ in plain {} }
        reader.cancel()
        await reader.value
        #expect(events.subscriberCount == 1)
    }
}
