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
    /// With `holdsFinish`, ``finished()`` waits until ``releaseFinish()`` (as a DNS removal waits for its server).
    private let finishGate: Mutex<(holds: Bool, waiter: CheckedContinuation<Void, Never>?)>
    /// Told when ``finished()`` begins to wait.
    let finishing = Inbox<Void>()

    init(holdsFinish: Bool = false) {
        (events, continuation) = AsyncStream.makeStream()
        finishGate = Mutex((holdsFinish, nil))
    }

    func finished() async {
        await withCheckedContinuation { waiter in
            let now = finishGate.withLock { gate -> Bool in
                guard gate.holds else { return true }
                gate.waiter = waiter
                return false
            }
            if now { waiter.resume() } else { finishing.put(()) }
        }
    }

    func releaseFinish() {
        finishGate.withLock { gate in
            gate.holds = false
            defer { gate.waiter = nil }
            return gate.waiter
        }?.resume()
    }

    var log: [String] { calls.withLock { $0 } }
    var advertisement: Advertisement? { advertised.withLock { $0 } }
    func emit(_ event: DiscoveryEvent) { continuation.yield(event) }

    func start() throws { calls.withLock { $0.append("start") } }
    func advertise(_ advertisement: Advertisement) throws {
        advertised.withLock { $0 = advertisement }
        calls.withLock { $0.append("advertise \(advertisement.instanceName)") }
    }
    func withdraw() { calls.withLock { $0.append("withdraw") } }
    func browse(_ type: ServiceType, domain: String?) {
        calls.withLock { $0.append("browse \(type)" + (domain.map { " in \($0)" } ?? "")) }
    }
    func stopBrowsing(_ type: ServiceType, domain: String?) { calls.withLock { $0.append("stop browsing \(type)") } }
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
        _ backend: ScriptedBackend, advertise: Bool = true, backoff: Duration = .seconds(3600), domains: [String] = [],
        interfaces: InterfaceFilter = .standard, requiresSecret: Bool = true, maximumServices: Int = 1024,
        stableAfter: Duration = .zero, extraTXT: TXTRecord = [:]
    ) -> DiscoveryCoordinator {
        var configuration = DiscoveryConfiguration(
            backend: DiscoveryBackendFactory(name: "scripted") { _ in backend }, instanceName: "Desk",
            advertise: advertise, browseDomains: domains, interfaces: interfaces
        )
        configuration.extraTXT = extraTXT
        configuration.maximumServices = maximumServices
        configuration.maximumAddressesPerService = 2
        return DiscoveryCoordinator(
            backend: backend,
            settings: .init(
                configuration: configuration,
                localID: me, displayName: "desk", port: 7206, requiresSecret: requiresSecret
            ),
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }),
            // An hour: a dial retried before that was woken by an event, not by the clock.
            // Every connection counts as stable unless a test says otherwise.
            makeBackoff: { Backoff(initial: backoff, maximum: backoff, stableAfter: stableAfter, jitter: { 1 }) }
        )
    }

    /// Starts `coordinator` and runs it with a dial that counts, records each service's instance name and answers
    /// with its peer id, and departures the test releases.
    static func run(_ coordinator: DiscoveryCoordinator) throws -> (dialled: Inbox<String>, dials: Counter, departures: Departures, running: Task<Void, Never>) {
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
        return (dialled, dials, departures, running)
    }

    @Test("a transceiver's run ends only once its discovery backend has finished stopping (a DNS removal waits for its server)")
    func runWaitsForTheBackendToFinish() async throws {
        let backend = ScriptedBackend(holdsFinish: true)
        let transceiver = makeTransceiver("desk") { configuration in
            configuration.discovery = DiscoveryConfiguration(
                backend: DiscoveryBackendFactory(name: "scripted") { _ in backend }, instanceName: "Desk")
        }
        let order = Mutex<[String]>([])
        let running = Task {
            try await transceiver.run()
            order.withLock { $0.append("run ended") }
        }
        try await transceiver.waitUntilListening()
        running.cancel()
        try await backend.finishing.next()
        #expect(backend.log.contains("stop"))
        order.withLock { $0.append("released") }
        backend.releaseFinish()
        try await running.value
        #expect(order.withLock { $0 } == ["released", "run ended"])
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

    @Test("extra TXT entries follow Parley's own at start; an extra entry with a key of Parley's own stops the start")
    func extraTXTAtStart() throws {
        let backend = ScriptedBackend()
        try Self.coordinator(backend, extraTXT: ["otlp": "4318"]).start()
        let txt = try #require(backend.advertisement?.txt)
        #expect(txt.keys == ["id", "pv", "nm", "auth", "otlp"])
        #expect(txt["otlp"] == "4318")

        let refused = ScriptedBackend()
        #expect(throws: DiscoveryError.reservedTXTKey("NM")) { try Self.coordinator(refused, extraTXT: ["NM": "impostor"]).start() }
        #expect(refused.advertisement == nil)
    }

    @Test("a TXT entry set while running is published as a new advertisement; the same value again publishes nothing; a record past its limit, or a key of Parley's own, throws and changes nothing")
    func extraTXTWhileRunning() throws {
        let backend = ScriptedBackend()
        let coordinator = Self.coordinator(backend)
        try coordinator.start()
        let advertisements = { backend.log.filter { $0.hasPrefix("advertise") }.count }
        #expect(advertisements() == 1)

        try coordinator.setExtraTXT("43181", forKey: "otlp")
        #expect(advertisements() == 2)
        #expect(backend.advertisement?.txt["otlp"] == "43181")
        #expect(backend.advertisement?.txt[TXTRecord.ParleyKey.peerID] == Self.me.rawValue)
        try coordinator.setExtraTXT("43181", forKey: "otlp")
        #expect(advertisements() == 2, "an unchanged record was published again")

        let tooLong = String(repeating: "x", count: 200)
        #expect(throws: DiscoveryError.self) { try coordinator.setExtraTXT(tooLong, forKey: "big") }
        #expect(throws: DiscoveryError.reservedTXTKey("auth")) { try coordinator.setExtraTXT("0", forKey: "auth") }
        #expect(advertisements() == 2)
        #expect(backend.advertisement?.txt.contains("big") == false)
        #expect(backend.advertisement?.txt[TXTRecord.ParleyKey.authentication] == "1")

        try coordinator.setExtraTXT(nil, forKey: "otlp")
        #expect(advertisements() == 3)
        #expect(backend.advertisement?.txt.contains("otlp") == false)
    }

    @Test("a node that does not advertise ignores TXT entries set while running")
    func extraTXTWithoutAdvertising() throws {
        let backend = ScriptedBackend()
        let coordinator = Self.coordinator(backend, advertise: false)
        try coordinator.start()
        try coordinator.setExtraTXT("4318", forKey: "otlp")
        #expect(backend.advertisement == nil)
        #expect(!backend.log.contains { $0.hasPrefix("advertise") })
    }

    @Test("Transceiver.setAdvertisedTXT reaches the running transceiver's advertisement; with discovery off it does nothing")
    func transceiverSetsTXT() async throws {
        let backend = ScriptedBackend()
        let transceiver = makeTransceiver("desk") { configuration in
            configuration.discovery = DiscoveryConfiguration(
                backend: DiscoveryBackendFactory(name: "scripted") { _ in backend }, instanceName: "Desk")
        }
        let quiet = makeTransceiver("quiet")
        try await withRunning([transceiver, quiet]) {
            try transceiver.setAdvertisedTXT("4318", forKey: "otlp")
            #expect(backend.advertisement?.txt["otlp"] == "4318")
            #expect(backend.advertisement?.port == UInt16(try #require(transceiver.listeningPort)))
            try quiet.setAdvertisedTXT("4318", forKey: "otlp")
        }
    }

    @Test("found Parley peers are dialled once each; its own advertisement and services without a peer id are not")
    func dialsAdmittedServices() async throws {
        let backend = ScriptedBackend()
        let coordinator = Self.coordinator(backend)
        let (dialled, dials, departures, running) = try Self.run(coordinator)
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
        backend.emit(.removed(instanceName: "Kitchen", type: .debug, domain: "local"))
        #expect(await eventually { coordinator.services.map(\.instanceName) == ["Desk", "Printer"] })
        departures.release(Self.kitchen)
        coordinator.stop()
        await running.value
        #expect(dials.count == 2, "dialled a withdrawn service")
        departures.releaseAll()
    }

    @Test("beyond the service limit new services are ignored, never dialled, until one is withdrawn; addresses per service are capped")
    func serviceLimit() async throws {
        let backend = ScriptedBackend()
        let coordinator = Self.coordinator(backend, maximumServices: 2)
        let (dialled, _, departures, running) = try Self.run(coordinator)
        var crowded = Self.service("Kitchen", id: Self.kitchen)
        crowded.addresses = (1...5).map { ResolvedAddress(host: "10.0.0.\($0)", family: .ipv4, interfaceIndex: 2, interfaceName: "eth0", isLinkLocal: false) }
        backend.emit(.found(crowded))
        backend.emit(.found(Self.service("Printer", id: nil)))
        backend.emit(.found(Self.service("Attic", id: PeerID())))
        #expect(try await dialled.next() == "Kitchen")
        #expect(coordinator.services.map(\.instanceName) == ["Kitchen", "Printer"])
        #expect(coordinator.services.first?.addresses.map(\.host) == ["10.0.0.1", "10.0.0.2"])
        // A service already known is still updated at the limit.
        backend.emit(.updated(Self.service("Printer", id: nil, host: "10.0.0.9")))
        #expect(await eventually { coordinator.services.last?.addresses.first?.host == "10.0.0.9" })

        // One withdrawn: the next one announced is taken, and dialled.
        backend.emit(.removed(instanceName: "Printer", type: .debug, domain: "local"))
        backend.emit(.found(Self.service("Attic", id: PeerID())))
        #expect(try await dialled.next() == "Attic")
        #expect(coordinator.services.map(\.instanceName) == ["Attic", "Kitchen"])
        coordinator.stop()
        departures.releaseAll()
        await running.value
    }

    @Test("a connection that ends right after its handshake is a failed attempt: redialled after the backoff, not at once")
    func shortConnectionBacksOff() async throws {
        let backend = ScriptedBackend()
        // Nothing lasts an hour here: every connection is too short to count.
        let coordinator = Self.coordinator(backend, stableAfter: .seconds(3600))
        let (dialled, dials, departures, running) = try Self.run(coordinator)
        backend.emit(.found(Self.service("Kitchen", id: Self.kitchen)))
        #expect(try await dialled.next() == "Kitchen")
        #expect(try await departures.parked.next() == Self.kitchen)
        // The peer ends the connection at once: the loop waits its (hour-long) backoff instead of redialling...
        departures.release(Self.kitchen)
        let kitchen = DiscoveredService.ID(instanceName: "Kitchen", domain: "local")
        #expect(await eventually { coordinator.waitingOutBackoff == [kitchen] })
        #expect(dials.count == 1)
        // ...until the service changes, which deserves a try at once.
        backend.emit(.updated(Self.service("Kitchen", id: Self.kitchen, host: "10.0.0.7")))
        #expect(try await dialled.next() == "Kitchen")
        #expect(dials.count == 2)
        coordinator.stop()
        departures.releaseAll()
        await running.value
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
        let running = try Self.runWithoutDialling(coordinator)
        let settled = Task { await coordinator.settled() }
        #expect(coordinator.status == .starting)
        backend.emit(.daemonAvailable)
        backend.emit(.advertised(instanceName: "Desk"))
        #expect(await settled.value == .running(advertisedAs: "Desk"))

        let other = ScriptedBackend()
        let browsing = Self.coordinator(other)
        let runningOther = try Self.runWithoutDialling(browsing)
        other.emit(.daemonUnavailable("avahi-daemon is not running"))
        #expect(await browsing.settled() == .daemonUnavailable("avahi-daemon is not running"))
        coordinator.stop()
        browsing.stop()
        await running.value
        await runningOther.value
    }

    @Test("with no usable interface up there is nothing to advertise: settled as running, unadvertised, once the daemon answers")
    func settlesWithNowhereToAdvertise() async throws {
        let backend = ScriptedBackend()
        let coordinator = Self.coordinator(backend)
        let running = try Self.runWithoutDialling(coordinator)
        let onlyExcluded = NetworkSnapshot(interfaces: [
            NetworkInterface(
                name: "docker0", index: 3, isUp: true, isLoopback: false,
                addresses: [InterfaceAddress(host: "172.17.0.1", family: .ipv4, isLinkLocal: false)])
        ])
        coordinator.networkChanged(onlyExcluded)
        #expect(backend.advertisement?.interfaceIndices == [])
        backend.emit(.daemonAvailable)
        #expect(await coordinator.settled() == .running(advertisedAs: nil))
        coordinator.stop()
        await running.value
    }

    /// Starts `coordinator` and runs it with nothing to dial: for what it reports, not whom it connects.
    static func runWithoutDialling(_ coordinator: DiscoveryCoordinator) throws -> Task<Void, Never> {
        try coordinator.start()
        return Task { await coordinator.run(dial: { _ in nil }, waitForDeparture: { _ in }) }
    }

    static func address(_ host: String, on interface: String, index: Int32) -> ResolvedAddress {
        ResolvedAddress(host: host, family: .ipv4, interfaceIndex: index, interfaceName: interface, isLinkLocal: false)
    }

    @Test("browse domains are browsed beside the link, and one name found in two domains is two services, each dialled")
    func browsesDomains() async throws {
        let backend = ScriptedBackend()
        let coordinator = Self.coordinator(backend, domains: ["parley.test", "lab.example"])
        try coordinator.start()
        #expect(backend.log == ["start", "advertise Desk", "browse _debug._tcp", "browse _debug._tcp in parley.test", "browse _debug._tcp in lab.example"])
        let dialled = Inbox<String>()
        let departures = Departures()
        let running = Task {
            await coordinator.run(
                dial: { service in
                    dialled.put(service.domain)
                    // One peer id per domain, so that each loop parks on a departure of its own.
                    return service.domain == "local" ? Self.kitchen : Self.me
                },
                waitForDeparture: { await departures.wait($0) }
            )
        }
        var wideArea = Self.service("Kitchen", id: Self.kitchen, host: "10.9.0.2")
        wideArea.domain = "parley.test"
        backend.emit(.found(Self.service("Kitchen", id: Self.kitchen)))
        backend.emit(.found(wideArea))
        let domains = [try await dialled.next(), try await dialled.next()]
        #expect(Set(domains) == ["local", "parley.test"])
        #expect(coordinator.services.map(\.id.description) == ["Kitchen", "Kitchen (parley.test)"])
        // Withdrawn from DNS: the link's service stays.
        backend.emit(.removed(instanceName: "Kitchen", type: .debug, domain: "parley.test"))
        #expect(await eventually { coordinator.services.map(\.domain) == ["local"] })
        coordinator.stop()
        departures.releaseAll()
        await running.value
    }

    @Test("addresses seen on excluded interfaces are dropped; a service seen only there is never dialled")
    func filtersInterfaces() async throws {
        let backend = ScriptedBackend()
        let coordinator = Self.coordinator(backend, domains: [])
        try coordinator.start()
        let dialled = Inbox<[String]>()
        let departures = Departures()
        let running = Task {
            await coordinator.run(
                dial: { service in
                    dialled.put(service.addresses.map(\.host))
                    return service.peerID.flatMap(PeerID.init(rawValue:))
                },
                waitForDeparture: { await departures.wait($0) }
            )
        }
        var container = Self.service("Container", id: PeerID(rawValue: "00000000-0000-4000-8000-0000000000dd")!)
        container.addresses = [Self.address("172.17.0.2", on: "docker0", index: 5)]
        var kitchen = Self.service("Kitchen", id: Self.kitchen)
        kitchen.addresses = [Self.address("172.17.0.3", on: "docker0", index: 5), Self.address("10.0.0.2", on: "eth0", index: 2)]
        backend.emit(.found(container))
        backend.emit(.found(kitchen))
        #expect(try await dialled.next() == ["10.0.0.2"])
        #expect(coordinator.services.map(\.instanceName) == ["Kitchen"])
        coordinator.stop()
        departures.releaseAll()
        await running.value
    }

    @Test("a network change re-advertises on the interfaces usable now and wakes dials waiting out a backoff")
    func networkChange() async throws {
        let backend = ScriptedBackend()
        let coordinator = Self.coordinator(backend, domains: [])
        try coordinator.start()
        let attempts = Inbox<Int>()
        let count = Counter()
        let running = Task {
            await coordinator.run(
                dial: { _ in
                    count.increment()
                    attempts.put(count.count)
                    return nil
                },
                waitForDeparture: { _ in }
            )
        }
        backend.emit(.found(Self.service("Kitchen", id: Self.kitchen)))
        #expect(try await attempts.next() == 1)

        func interface(_ name: String, _ index: Int32, up: Bool, loopback: Bool = false) -> NetworkInterface {
            NetworkInterface(
                name: name, index: index, isUp: up, isLoopback: loopback,
                addresses: [InterfaceAddress(host: "10.0.\(index).1", family: .ipv4, isLinkLocal: false)])
        }
        let before = NetworkSnapshot(interfaces: [
            interface("lo", 1, up: true, loopback: true), interface("eth0", 2, up: true),
            interface("docker0", 3, up: true), interface("wlan0", 4, up: false),
        ])
        coordinator.networkChanged(before)
        #expect(backend.advertisement?.interfaceIndices == [2])
        // The backoff is an hour: only the network change can bring the next attempt.
        #expect(try await attempts.next(timeout: .seconds(30)) == 2)

        var after = before
        after.interfaces[3].isUp = true
        coordinator.networkChanged(after)
        #expect(backend.advertisement?.interfaceIndices == [2, 4])
        #expect(try await attempts.next(timeout: .seconds(30)) == 3)
        let advertisements = backend.log.filter { $0.hasPrefix("advertise") }.count
        coordinator.networkChanged(after)
        #expect(backend.log.filter { $0.hasPrefix("advertise") }.count == advertisements, "re-advertised without a change")
        coordinator.stop()
        await running.value
    }
}
