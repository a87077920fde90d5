import ParleyDiscovery
import Testing

@testable import ParleyDNSSD

/// The backend's decisions over `dns_sd.h`'s answers, driven by a scripted driver: no daemon, no C. The lab tests
/// (ParleyDiscoveryLabTests) run the same behaviours against Avahi's compatibility library and real daemons.
@Suite("DNS-SD session")
struct DNSSDSessionTests {
    let kitchen = Advertisement(instanceName: "Kitchen", subtypes: ["_relay"], port: 7000, txt: ["id": "1", "nm": "Ann"])

    func advertise(_ test: SessionUnderTest, _ advertisement: Advertisement) throws {
        test.session.apply(.advertise(advertisement, subtypes: try advertisement.validated()))
    }

    func found(_ events: [DiscoveryEvent]) -> DiscoveredService? {
        for case .found(let service) in events { return service }
        return nil
    }

    // MARK: - Advertising

    @Test func registersTheTypeWithItsSubtypesPortAndTXTThenReportsItAdvertised() throws {
        let test = SessionUnderTest()
        try advertise(test, kitchen)
        #expect(
            test.driver.live == [
                .register(
                    RegistrationRequest(
                        name: "Kitchen", registrationType: "_debug._tcp,_relay", interfaceIndex: 0, port: 7000,
                        txt: kitchen.txt.dnssdBytes))
            ])
        #expect(test.takeEvents() == [.daemonAvailable])
        test.reply(.registered(name: "Kitchen"), to: test.registration)
        #expect(test.takeEvents() == [.advertised(instanceName: "Kitchen")])
        // The daemon confirms again (it re-announced): nothing new to say.
        test.reply(.registered(name: "Kitchen"), to: test.registration)
        #expect(test.takeEvents() == [])
    }

    @Test func aNameTakenOnThisHostIsReplacedByTheNextOne() throws {
        // Avahi's library answers a name held by another service of this host with kDNSServiceErr_NameConflict at
        // once, and renames nothing itself.
        let test = SessionUnderTest()
        test.driver.refuse = { call in
            if case .register(let request) = call, request.name == "Twin" || request.name == "Twin #2" { return .nameConflict }
            return nil
        }
        try advertise(test, Advertisement(instanceName: "Twin", port: 7005))
        #expect(test.driver.live.map(\.description) == ["register Twin #3 _debug._tcp on 0"])
        #expect(
            test.takeEvents() == [
                .renamed(from: "Twin", to: "Twin #2"), .renamed(from: "Twin #2", to: "Twin #3"), .daemonAvailable,
            ])
        test.reply(.registered(name: "Twin #3"), to: test.registration)
        #expect(test.takeEvents() == [.advertised(instanceName: "Twin #3")])
    }

    @Test func aConflictReportedLaterRegistersAgainUnderTheNextName() throws {
        let test = SessionUnderTest()
        try advertise(test, kitchen)
        let first = try #require(test.registration)
        _ = test.takeEvents()
        test.reply(.failed(.nameConflict), to: first)
        #expect(test.driver.cancelled.contains(first))
        #expect(test.driver.live.map(\.description) == ["register Kitchen #2 _debug._tcp,_relay on 0"])
        test.reply(.registered(name: "Kitchen #2"), to: test.registration)
        #expect(test.takeEvents() == [.renamed(from: "Kitchen", to: "Kitchen #2"), .advertised(instanceName: "Kitchen #2")])
    }

    @Test func aNameTheDaemonChangedItselfIsReportedAsARename() throws {
        // Avahi's library renames by itself when another host holds the name (Apple's always): the callback says so.
        let test = SessionUnderTest()
        try advertise(test, Advertisement(instanceName: "Clash", port: 7003))
        _ = test.takeEvents()
        test.reply(.registered(name: "Clash #2"), to: test.registration)
        #expect(test.takeEvents() == [.renamed(from: "Clash", to: "Clash #2"), .advertised(instanceName: "Clash #2")])
        // The alternative name is kept: a later TXT change updates the record of "Clash #2".
        var changed = Advertisement(instanceName: "Clash", port: 7003)
        changed.txt["nm"] = "new"
        try advertise(test, changed)
        #expect(test.driver.updates.count == 1)
        #expect(test.driver.live.count == 1)
    }

    @Test func aTXTChangeAloneIsAnUpdateAndAnythingElseRegistersAgain() throws {
        let test = SessionUnderTest()
        try advertise(test, kitchen)
        let registration = try #require(test.registration)
        var renamed = kitchen
        renamed.txt["nm"] = "Ann, renamed"
        try advertise(test, renamed)
        #expect(test.driver.updates == [.updateTXT(registration, renamed.txt.dnssdBytes)])
        #expect(test.driver.cancelled.isEmpty)
        // The same again: nothing to send.
        try advertise(test, renamed)
        #expect(test.driver.updates.count == 1)
        // Another port: a new registration replaces the old one.
        var moved = renamed
        moved.port = 7100
        try advertise(test, moved)
        #expect(test.driver.cancelled == [registration])
        #expect(test.driver.live.map(\.description) == ["register Kitchen _debug._tcp,_relay on 0"])
    }

    @Test func anUpdateTheDaemonRefusesRegistersTheServiceAgain() throws {
        let test = SessionUnderTest()
        try advertise(test, kitchen)
        let registration = try #require(test.registration)
        test.driver.refuse = { if case .updateTXT = $0 { .badState } else { nil } }
        var changed = kitchen
        changed.txt["nm"] = "Bea"
        try advertise(test, changed)
        #expect(test.driver.cancelled == [registration])
        guard case .register(let request) = test.driver.live.first else {
            Issue.record("not registered again: \(test.driver.live)")
            return
        }
        #expect(request.txt == changed.txt.dnssdBytes)
    }

    @Test func namedInterfacesGetARegistrationEachAndTheServiceIsAdvertisedOnceAllAre() throws {
        let test = SessionUnderTest()
        var advertisement = kitchen
        advertisement.interfaceIndices = [2, 3]
        try advertise(test, advertisement)
        let registrations = test.driver.started.map(\.operation)
        #expect(test.driver.live.map(\.description) == ["register Kitchen _debug._tcp,_relay on 2", "register Kitchen _debug._tcp,_relay on 3"])
        _ = test.takeEvents()
        test.reply(.registered(name: "Kitchen"), to: registrations[0])
        #expect(test.takeEvents() == [])
        test.reply(.registered(name: "Kitchen"), to: registrations[1])
        #expect(test.takeEvents() == [.advertised(instanceName: "Kitchen")])

        // No usable interface: nothing is registered, and nothing fails.
        advertisement.interfaceIndices = []
        try advertise(test, advertisement)
        #expect(test.driver.live.isEmpty)
        #expect(test.takeEvents() == [])
    }

    @Test func aRefusedAdvertisementIsReportedAndStaysWithdrawn() throws {
        let test = SessionUnderTest()
        try advertise(test, kitchen)
        _ = test.takeEvents()
        test.reply(.failed(.badParameter), to: test.registration)
        let events = test.takeEvents()
        guard case .advertisementFailed(let failure) = events.first, events.count == 1 else {
            Issue.record("expected one advertisementFailed, got \(events)")
            return
        }
        #expect(failure.reason == .rejected)
        #expect(failure.detail.contains("badParameter"))
        #expect(test.driver.live.isEmpty)
    }

    @Test func withdrawingEndsTheRegistration() throws {
        let test = SessionUnderTest()
        try advertise(test, kitchen)
        let registration = try #require(test.registration)
        test.session.apply(.withdraw)
        #expect(test.driver.cancelled == [registration])
        // A late reply of the withdrawn registration says nothing.
        _ = test.takeEvents()
        test.reply(.registered(name: "Kitchen"), to: registration)
        #expect(test.takeEvents() == [])
    }

    // MARK: - Browsing

    /// Browses `_debug._tcp` and answers for Kitchen on interface 2: resolved to hosta.local:7000, A 10.0.0.1 and
    /// AAAA fe80::1.
    func browseAndResolveKitchen(_ test: SessionUnderTest) throws {
        test.session.apply(.browse(BrowseScope(.debug, domain: nil)))
        #expect(test.driver.live.last?.description == "browse _debug._tcp in local")
        test.reply(.browsed(added: true, interfaceIndex: 2, name: "Kitchen", domain: "local."), to: test.browser)
        test.reply(
            .resolved(interfaceIndex: 2, hostTarget: "hosta.local.", port: 7000, txt: kitchen.txt.encodedStrings),
            to: test.resolver("Kitchen", on: 2))
        #expect(test.query("hosta.local.", .ipv4, on: 2) != nil && test.query("hosta.local.", .ipv6, on: 2) != nil)
        test.reply(.address(added: true, interfaceIndex: 2, family: .ipv4, bytes: [10, 0, 0, 1]), to: test.query("hosta.local.", .ipv4, on: 2))
        test.reply(
            .address(added: true, interfaceIndex: 2, family: .ipv6, bytes: [0xFE, 0x80] + Array(repeating: 0, count: 13) + [1]),
            to: test.query("hosta.local.", .ipv6, on: 2))
    }

    @Test func aBrowsedServiceIsResolvedAndItsAddressesQueriedOnItsInterface() throws {
        let test = SessionUnderTest()
        try browseAndResolveKitchen(test)
        let events = test.takeEvents()
        #expect(events.first == .daemonAvailable)
        let first = try #require(found(events))
        #expect(first.instanceName == "Kitchen" && first.domain == "local" && first.hostName == "hosta.local")
        #expect(first.port == 7000 && first.txt == kitchen.txt)
        #expect(first.addresses.map(\.host) == ["10.0.0.1"])
        guard case .updated(let complete) = events.last else {
            Issue.record("the IPv6 address was not reported: \(events)")
            return
        }
        #expect(complete.addresses.map(\.connectHost) == ["10.0.0.1", "fe80::1%if2"])
        #expect(complete.addresses.map(\.isLinkLocal) == [false, true])
    }

    @Test func aServiceSeenTwiceOnAnInterfaceIsRemovedWhenBothSightingsGo() throws {
        // Avahi's library reports a service (and an address) once per mDNS protocol on the same interface.
        let test = SessionUnderTest()
        try browseAndResolveKitchen(test)
        test.reply(.browsed(added: true, interfaceIndex: 2, name: "Kitchen", domain: "local."), to: test.browser)
        test.reply(.address(added: true, interfaceIndex: 2, family: .ipv4, bytes: [10, 0, 0, 1]), to: test.query("hosta.local.", .ipv4, on: 2))
        #expect(test.driver.live.count == 4, "one resolver and two queries for the one slot, and the browser")
        _ = test.takeEvents()
        test.reply(.address(added: false, interfaceIndex: 2, family: .ipv4, bytes: [10, 0, 0, 1]), to: test.query("hosta.local.", .ipv4, on: 2))
        test.reply(.browsed(added: false, interfaceIndex: 2, name: "Kitchen", domain: "local."), to: test.browser)
        #expect(test.takeEvents() == [], "still seen once, with its address")
        test.reply(.browsed(added: false, interfaceIndex: 2, name: "Kitchen", domain: "local."), to: test.browser)
        #expect(test.takeEvents() == [.removed(instanceName: "Kitchen", type: .debug, domain: "local")])
        #expect(test.driver.live.map(\.description) == ["browse _debug._tcp in local"])
    }

    @Test func aTXTChangeSeenByTheResolverIsAnUpdate() throws {
        let test = SessionUnderTest()
        try browseAndResolveKitchen(test)
        _ = test.takeEvents()
        var changed = kitchen.txt
        changed["nm"] = "Ann, renamed"
        test.reply(.resolved(interfaceIndex: 2, hostTarget: "hosta.local.", port: 7000, txt: changed.encodedStrings), to: test.resolver("Kitchen", on: 2))
        guard case .updated(let service) = test.takeEvents().first else {
            Issue.record("no update")
            return
        }
        #expect(service.txt["nm"] == "Ann, renamed")
        #expect(service.addresses.count == 2, "the addresses stay: the host did not change")
    }

    @Test func aResolverThatGivesUpIsNotTheDaemonGoing() throws {
        // Avahi's library answers a resolver's timeout with kDNSServiceErr_Unknown, as it does a lost daemon.
        let test = SessionUnderTest()
        test.session.apply(.browse(BrowseScope(.debug, domain: nil)))
        test.reply(.browsed(added: true, interfaceIndex: 2, name: "Silent", domain: "local."), to: test.browser)
        let resolver = try #require(test.resolver("Silent", on: 2))
        _ = test.takeEvents()
        test.reply(.failed(.unknown), to: resolver)
        #expect(test.takeEvents() == [])
        #expect(test.driver.cancelled == [resolver])
        #expect(test.driver.retries.isEmpty)
        #expect(test.driver.live.map(\.description) == ["browse _debug._tcp in local"])
    }

    @Test func stoppingBrowsingRemovesWhatItFoundAndEndsItsOperations() throws {
        let test = SessionUnderTest()
        try browseAndResolveKitchen(test)
        _ = test.takeEvents()
        test.session.apply(.stopBrowsing(BrowseScope(.debug, domain: nil)))
        #expect(test.takeEvents() == [.removed(instanceName: "Kitchen", type: .debug, domain: "local")])
        #expect(test.driver.live.isEmpty)
    }

    @Test func wideAreaResultsAreResolvedOnEveryInterface() throws {
        // Avahi reports them on its "any interface" (-1), which dns_sd.h reads as its local-only index.
        let test = SessionUnderTest()
        test.session.apply(.browse(BrowseScope(.debug, domain: "parley.test")))
        test.reply(.browsed(added: true, interfaceIndex: UInt32.max, name: "Far", domain: "parley.test."), to: test.browser)
        #expect(test.driver.live.last == .resolve(name: "Far", domain: "parley.test.", interfaceIndex: 0))
    }

    // MARK: - The daemon

    @Test func retriesComeAfterHalfASecondDoublingToFiveSeconds() {
        #expect((1...7).map(DNSSDSession.retryDelay(afterFailures:)) == [
            .milliseconds(500), .seconds(1), .seconds(2), .seconds(4), .seconds(5), .seconds(5), .seconds(5),
        ])
    }

    @Test func anUnreachableDaemonIsReportedOnceAndTriedAgainUntilItAnswers() throws {
        let test = SessionUnderTest()
        var daemonUp = false
        test.driver.refuse = { _ in daemonUp ? nil : .unknown }
        test.session.apply(.browse(BrowseScope(.debug, domain: nil)))
        try advertise(test, kitchen)
        let events = test.takeEvents()
        guard case .daemonUnavailable(let reason) = events.first, events.count == 1 else {
            Issue.record("expected one daemonUnavailable, got \(events)")
            return
        }
        #expect(reason.contains("\(DNSSDSession.daemonName) \(DNSSDSession.unreachable)"))
        #expect(reason.contains("DNSServiceBrowse failed: unknown error (unknown, -65537)"))
        #expect(test.driver.retries == [.milliseconds(500)])

        test.session.retryDue()
        test.session.retryDue()
        #expect(test.driver.retries == [.milliseconds(500), .seconds(1), .seconds(2)])
        #expect(test.takeEvents() == [], "said once for the whole outage")

        daemonUp = true
        test.session.retryDue()
        #expect(test.takeEvents() == [.daemonAvailable])
        #expect(test.driver.live.map(\.description) == ["browse _debug._tcp in local", "register Kitchen _debug._tcp,_relay on 0"])
    }

    @Test func aDaemonThatGoesAwayTakesItsServicesAndEverythingComesBackWithIt() throws {
        let test = SessionUnderTest()
        try advertise(test, kitchen)
        test.reply(.registered(name: "Kitchen"), to: test.registration)
        try browseAndResolveKitchen(test)
        _ = test.takeEvents()

        // Avahi's library reports its failed client as kDNSServiceErr_Unknown to the browser.
        test.reply(.failed(.unknown), to: test.browser)
        let events = test.takeEvents()
        guard case .daemonUnavailable(let reason) = events.first else {
            Issue.record("expected daemonUnavailable first, got \(events)")
            return
        }
        #expect(reason.contains("the connection to \(DNSSDSession.daemonName) failed"))
        #expect(events.dropFirst() == [.removed(instanceName: "Kitchen", type: .debug, domain: "local")])
        #expect(test.driver.live.isEmpty)
        #expect(test.driver.retries == [.milliseconds(500)])

        // While it is away, wishes are kept, not tried.
        test.session.apply(.browse(BrowseScope(try ServiceType("_ipp._tcp"), domain: nil)))
        #expect(test.driver.live.isEmpty)

        test.session.retryDue()
        #expect(test.takeEvents() == [.daemonAvailable])
        #expect(
            test.driver.live.map(\.description) == [
                "browse _debug._tcp in local", "browse _ipp._tcp in local", "register Kitchen _debug._tcp,_relay on 0",
            ])
        test.reply(.registered(name: "Kitchen"), to: test.registration)
        #expect(test.takeEvents() == [.advertised(instanceName: "Kitchen")])
    }

    @Test func applesCodesForALostDaemonCountFromEveryOperation() throws {
        let test = SessionUnderTest()
        try browseAndResolveKitchen(test)
        _ = test.takeEvents()
        test.reply(.failed(.serviceNotRunning), to: test.query("hosta.local.", .ipv6, on: 2))
        guard case .daemonUnavailable = test.takeEvents().first else {
            Issue.record("serviceNotRunning from an address query did not count as the daemon going")
            return
        }
        #expect(test.driver.live.isEmpty)
    }

    @Test func aRetryWithNothingToAskLeavesTheNextWishToTryAtOnce() throws {
        let test = SessionUnderTest()
        test.session.apply(.browse(BrowseScope(.debug, domain: nil)))
        test.reply(.failed(.unknown), to: test.browser)
        test.session.apply(.stopBrowsing(BrowseScope(.debug, domain: nil)))
        test.session.retryDue()
        #expect(test.driver.live.isEmpty)
        _ = test.takeEvents()
        test.session.apply(.browse(BrowseScope(.debug, domain: nil)))
        #expect(test.driver.live.map(\.description) == ["browse _debug._tcp in local"])
        #expect(test.takeEvents() == [.daemonAvailable])
    }

    @Test func aRenamedServiceKeepsItsNameAcrossADaemonRestart() throws {
        let test = SessionUnderTest()
        try advertise(test, kitchen)
        test.reply(.registered(name: "Kitchen #2"), to: test.registration)
        test.reply(.failed(.unknown), to: test.registration)
        test.session.retryDue()
        #expect(test.driver.live.map(\.description) == ["register Kitchen #2 _debug._tcp,_relay on 0"])
    }
}
