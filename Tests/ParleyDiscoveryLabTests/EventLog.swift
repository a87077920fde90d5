import Foundation
import ParleyDiscovery
import ParleyTestSupport

/// Collects a discovery backend's events in the background so a test can wait for them (an ``EventRecord``: a
/// wait is woken by the event it waits for).
final class EventLog: Sendable {
    private let record = EventRecord<DiscoveryEvent>()

    init(_ discovery: any DiscoveryBackend) {
        Task.detached { [record] in
            for await event in discovery.events { record.append(event) }
            record.finish()
        }
    }

    var all: [DiscoveryEvent] { record.all }
    var isFinished: Bool { record.isFinished }

    /// Returns once the backend's event stream has ended (or after `timeout`).
    func waitUntilFinished(timeout: Duration) async { await record.waitUntilFinished(timeout: timeout) }

    @discardableResult
    func waitFor(_ what: String, timeout: Duration = .seconds(10), _ predicate: @escaping @Sendable (DiscoveryEvent) -> Bool) async throws
        -> DiscoveryEvent
    {
        do {
            return try await record.waitFor(what, timeout: timeout, where: predicate)
        } catch is TestTimeout {
            throw Probe.Timeout(waitingFor: what, seen: all.map { "\($0)" }, stderr: "")
        }
    }
}
