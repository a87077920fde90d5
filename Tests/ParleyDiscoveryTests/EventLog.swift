import Foundation
import ParleyAvahi
import ParleyDiscovery
import Synchronization

/// Collects an `AvahiDiscovery`'s events in the background so a test can wait for them.
final class EventLog: Sendable {
    private let events = Mutex<[DiscoveryEvent]>([])
    private let finished = Mutex(false)

    init(_ discovery: AvahiDiscovery) {
        Task.detached { [self] in
            for await event in discovery.events { self.events.withLock { $0.append(event) } }
            self.finished.withLock { $0 = true }
        }
    }

    var all: [DiscoveryEvent] { events.withLock { $0 } }
    var isFinished: Bool { finished.withLock { $0 } }

    @discardableResult
    func waitFor(_ what: String, timeout: Duration = .seconds(10), _ predicate: (DiscoveryEvent) -> Bool) async throws
        -> DiscoveryEvent
    {
        let deadline = ContinuousClock.now + timeout
        while true {
            let all = self.all
            if let match = all.first(where: predicate) { return match }
            if ContinuousClock.now >= deadline {
                throw Probe.Timeout(waitingFor: what, seen: all.map { "\($0)" }, stderr: "")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }
}

