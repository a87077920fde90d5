import Logging
import ParleyDiscovery
import Testing

@testable import ParleyDNSSD

/// The public type's lifecycle. Nothing here advertises or browses, so no daemon is asked anything: with nothing to
/// do, the backend's thread makes no reference.
@Suite("DNSSDDiscovery's lifecycle")
struct DNSSDDiscoveryTests {
    let logger = Logger(label: "parley.dnssd.test", factory: { _ in SwiftLogNoOpLogHandler() })

    @Test func theFactoryMakesThisBackendUnderItsName() {
        #expect(DiscoveryBackendFactory.dnssd.name == "dnssd")
        #expect(DiscoveryBackendFactory.dnssd.makeBackend(logger: logger) is DNSSDDiscovery)
    }

    @Test func anInvalidAdvertisementIsRefusedBeforeAnyCall() {
        let discovery = DNSSDDiscovery(logger: logger)
        let tooLarge = TXTRecord([(key: "nm", value: String(repeating: "x", count: 230))])
        #expect(throws: DiscoveryError.txtRecordTooLarge(size: 234, limit: 200)) {
            try discovery.advertise(Advertisement(instanceName: "Local", port: 7021, txt: tooLarge))
        }
        #expect(throws: DiscoveryError.invalidSubtype("relay")) {
            try discovery.advertise(Advertisement(instanceName: "Local", subtypes: ["relay"], port: 7021))
        }
    }

    @Test func stopEndsTheEventsAndIsFinal() async throws {
        let discovery = DNSSDDiscovery(logger: logger)
        try discovery.start()
        try discovery.start()  // harmless
        discovery.stop()
        discovery.stop()
        var events: [DiscoveryEvent] = []
        for await event in discovery.events { events.append(event) }
        #expect(events.isEmpty)
        #expect(throws: DiscoveryError.stopped) { try discovery.start() }
        #expect(throws: DiscoveryError.stopped) { try discovery.advertise(Advertisement(instanceName: "Local", port: 7021)) }
    }

    @Test func aStartFailureSaysWhichCallFailedAndWhy() {
        let error = DNSSDStartError(call: "pipe", errorNumber: 24)
        #expect("\(error)".hasPrefix("cannot start DNS-SD discovery: pipe() failed: Too many open files (errno 24)"))
    }
}
