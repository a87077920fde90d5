import Logging
@testable import Parley
import ParleyDiscovery
import ParleyTestSupport
import Synchronization
import Testing

/// A discovery backend the test scripts: it records what it is asked to do and emits the events the test gives it.
final class ScriptedBackend: DiscoveryBackend {
    let events: AsyncStream<DiscoveryEvent>
    private let continuation: AsyncStream<DiscoveryEvent>.Continuation
    private let calls = Mutex<[String]>([])
    private let advertised = Mutex<Advertisement?>(nil)

    init() { (events, continuation) = AsyncStream.makeStream() }

    var log: [String] { calls.withLock { $0 } }
    var advertisement: Advertisement? { advertised.withLock { $0 } }
    func emit(_ event: DiscoveryEvent) { continuation.yield(event) }

    func start() throws { calls.withLock { $0.append("start") } }
    func advertise(_ advertisement: Advertisement) throws {
        advertised.withLock { $0 = advertisement }
        calls.withLock { $0.append("advertise \(advertisement.instanceName)") }
    }
    func withdraw() { calls.withLock { $0.append("withdraw") } }
    func browse(_ type: ServiceType) { calls.withLock { $0.append("browse \(type)") } }
    func stopBrowsing(_ type: ServiceType) { calls.withLock { $0.append("stop browsing \(type)") } }
    func stop() {
        calls.withLock { $0.append("stop") }
        continuation.finish()
    }
}

/// Stands in for the registry's departures: a dialling loop waits here until the test lets the peer go.
final class Departures: Sendable {
    private let waiting = Mutex<[PeerID: CheckedContinuation<Void, Never>]>([:])
    let parked = Inbox<PeerID>()

    func wait(_ peer: PeerID) async {
        await withCheckedContinuation { continuation in
            waiting.withLock { $0[peer] = continuation }
            parked.put(peer)
        }
    }

    func release(_ peer: PeerID) { waiting.withLock { $0.removeValue(forKey: peer) }?.resume() }
    func releaseAll() { for continuation in waiting.withLock({ $0.values }) { continuation.resume() } }
}

@Suite("Discovery coordinator, driven by a scripted backend")
struct DiscoveryCoordinatorTests {
    static let me = PeerID(rawValue: "00000000-0000-4000-8000-000000000001")!
    static let kitchen = PeerID(rawValue: "00000000-0000-4000-8000-00000000000c")!

    static func service(_ name: String, id: PeerID?, host: String = "10.0.0.2") -> DiscoveredService {
        DiscoveredService(
            instanceName: name, type: .debug, domain: "local", hostName: "\(name).local",
            addresses: [ResolvedAddress(host: host, family: .ipv4, interfaceIndex: 2, interfaceName: "eth0", isLinkLocal: false)],
            port: 7206,
            txt: id.map { .parley(peerID: $0.rawValue, displayName: name, requiresSecret: false) } ?? [:]
        )
    }

    static func coordinator(
        _ backend: ScriptedBackend, advertise: Bool = true, backoff: Duration = .seconds(3600)
    ) -> DiscoveryCoordinator {
        DiscoveryCoordinator(
            backend: backend,
            settings: .init(
                configuration: DiscoveryConfiguration(
                    backend: DiscoveryBackendFactory(name: "scripted") { _ in backend }, instanceName: "Desk",
                    advertise: advertise
                ),
                localID: me, displayName: "desk", port: 7206, requiresSecret: true
            ),
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }),
            // An hour: a dial retried before that was woken by an event, not by the clock.
            makeBackoff: { Backoff(initial: backoff, maximum: backoff, jitter: { 1 }) }
        )
    }

    @Test("start advertises the listener with the node's id, name and secret flag, and browses the type")
    func advertisesAndBrowses() throws {
        let backend = ScriptedBackend()
        let coordinator = Self.coordinator(backend)
        try coordinator.start()
        #expect(backend.log == ["start", "advertise Desk", "browse _debug._tcp"])
        let txt = try #require(backend.advertisement?.txt)
        #expect(txt[TXTRecord.ParleyKey.peerID] == Self.me.rawValue)
        #expect(txt[TXTRecord.ParleyKey.displayName] == "desk")
        #expect(txt[TXTRecord.ParleyKey.authentication] == "1")
        #expect(backend.advertisement?.port == 7206)
    }

    @Test("found Parley peers are dialled once each; its own advertisement and services without a peer id are not")
    func dialsAdmittedServices() async throws {
        let backend = ScriptedBackend()
        let coordinator = Self.coordinator(backend)
        let dialled = Inbox<String>()
        let dials = Counter()
        let departures = Departures()
        try coordinator.start()
        let running = Task {
            await coordinator.run(
                dial: { service in
                    dials.increment()
                    dialled.put(service.instanceName)
                    return service.peerID.flatMap(PeerID.init(rawValue:))
                },
                waitForDeparture: { await departures.wait($0) }
            )
        }
        backend.emit(.found(Self.service("Desk", id: Self.me)))
        backend.emit(.found(Self.service("Printer", id: nil)))
        backend.emit(.found(Self.service("Kitchen", id: Self.kitchen)))
        backend.emit(.updated(Self.service("Kitchen", id: Self.kitchen, host: "10.0.0.3")))
        #expect(try await dialled.next() == "Kitchen")
        #expect(try await departures.parked.next() == Self.kitchen)
        #expect(coordinator.services.map(\.instanceName) == ["Desk", "Kitchen", "Printer"])

        // The peer goes: it is dialled again, since it is still advertised.
        departures.release(Self.kitchen)
        #expect(try await dialled.next() == "Kitchen")
        #expect(try await departures.parked.next() == Self.kitchen)

        // Withdrawn, then gone: no more dials, and the loop ends.
        backend.emit(.removed(instanceName: "Kitchen", type: .debug))
        #expect(await eventually { coordinator.services.map(\.instanceName) == ["Desk", "Printer"] })
        departures.release(Self.kitchen)
        coordinator.stop()
        await running.value
        #expect(dials.count == 2, "dialled a withdrawn service")
        departures.releaseAll()
    }

    @Test("a failed dial waits out its backoff, but a changed address is tried at once")
    func updateWakesBackoff() async throws {
        let backend = ScriptedBackend()
        let coordinator = Self.coordinator(backend)
        let dialled = Inbox<String>()
        let departures = Departures()
        try coordinator.start()
        let running = Task {
            await coordinator.run(
                dial: { service in
                    let host = service.addresses[0].host
                    dialled.put(host)
                    return host == "10.0.0.9" ? Self.kitchen : nil  // only the new address answers
                },
                waitForDeparture: { await departures.wait($0) }
            )
        }
        backend.emit(.found(Self.service("Kitchen", id: Self.kitchen)))
        #expect(try await dialled.next() == "10.0.0.2")
        // The backoff is an hour: only the update can bring the next attempt.
        backend.emit(.updated(Self.service("Kitchen", id: Self.kitchen, host: "10.0.0.9")))
        #expect(try await dialled.next(timeout: .seconds(30)) == "10.0.0.9")
        #expect(try await departures.parked.next() == Self.kitchen)
        coordinator.stop()
        departures.releaseAll()
        await running.value
    }

    @Test("settled answers once the backend has advertised, or reported its daemon unavailable")
    func settles() async throws {
        let backend = ScriptedBackend()
        let coordinator = Self.coordinator(backend)
        try coordinator.start()
        let running = Task { await coordinator.run(dial: { _ in nil }, waitForDeparture: { _ in }) }
        let settled = Task { await coordinator.settled() }
        #expect(coordinator.status == .starting)
        backend.emit(.daemonAvailable)
        backend.emit(.advertised(instanceName: "Desk"))
        #expect(await settled.value == .running(advertisedAs: "Desk"))

        let other = ScriptedBackend()
        let browsing = Self.coordinator(other)
        try browsing.start()
        let runningOther = Task { await browsing.run(dial: { _ in nil }, waitForDeparture: { _ in }) }
        other.emit(.daemonUnavailable("avahi-daemon is not running"))
        #expect(await browsing.settled() == .daemonUnavailable("avahi-daemon is not running"))
        coordinator.stop()
        browsing.stop()
        await running.value
        await runningOther.value
    }
}
