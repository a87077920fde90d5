import ParleyDiscovery
import Testing

@Suite("Merging a backend's per-slot results")
struct ServiceMergeStateTests {
    /// A slot as Avahi's backend keys it: the interface and the mDNS protocol a result came on.
    struct Slot: Hashable, Sendable {
        var interfaceIndex: Int32
        var family: ResolvedAddress.Family
    }
    typealias State = ServiceMergeState<Slot>
    let key = ServiceKey(instanceName: "Kitchen", type: .debug, domain: "local")
    let eth0v4 = Slot(interfaceIndex: 2, family: .ipv4)
    let eth0v6 = Slot(interfaceIndex: 2, family: .ipv6)
    let wlan0v4 = Slot(interfaceIndex: 3, family: .ipv4)

    func address(_ host: String, _ index: Int32) -> ResolvedAddress {
        let v6 = host.contains(":")
        return ResolvedAddress(
            host: host, family: v6 ? .ipv6 : .ipv4, interfaceIndex: index, interfaceName: "if\(index)",
            isLinkLocal: v6 && host.hasPrefix("fe80"))
    }

    func resolution(_ host: String, _ index: Int32, txt: TXTRecord = ["id": "1"], port: UInt16 = 7000) -> ServiceResolution {
        ServiceResolution(hostName: "hosta.local", addresses: [address(host, index)], port: port, txt: txt)
    }

    func service(_ addresses: [ResolvedAddress], txt: TXTRecord = ["id": "1"]) -> DiscoveredService {
        DiscoveredService(
            instanceName: "Kitchen", type: .debug, domain: "local", hostName: "hosta.local", addresses: addresses,
            port: 7000, txt: txt)
    }

    @Test func reportsAServiceOnceAcrossInterfacesAndProtocols() {
        var state = State()
        for slot in [eth0v4, eth0v6, wlan0v4] { state.appeared(key, on: slot) }
        #expect(state.resolved(key, on: eth0v6, resolution("fe80::1", 2)) == [.found(service([address("fe80::1", 2)]))])
        #expect(
            state.resolved(key, on: eth0v4, resolution("10.0.0.1", 2))
                == [.updated(service([address("10.0.0.1", 2), address("fe80::1", 2)]))])
        // Same address on another interface: a new (address, interface) pair, so an update.
        #expect(
            state.resolved(key, on: wlan0v4, resolution("10.0.0.1", 3))
                == [.updated(service([address("10.0.0.1", 2), address("10.0.0.1", 3), address("fe80::1", 2)]))])
        // The same answer again (Avahi repeats itself): nothing.
        #expect(state.resolved(key, on: wlan0v4, resolution("10.0.0.1", 3)) == [])
        // Seen again on a slot it is already on: nothing.
        state.appeared(key, on: eth0v4)
        #expect(state.reportedServices.count == 1)
    }

    @Test func reportsRemovalOnlyWhenTheLastSlotIsGone() {
        var state = State()
        for slot in [eth0v4, eth0v6] { state.appeared(key, on: slot) }
        _ = state.resolved(key, on: eth0v4, resolution("10.0.0.1", 2))
        _ = state.resolved(key, on: eth0v6, resolution("fe80::1", 2))
        #expect(state.disappeared(key, on: eth0v4) == [.updated(service([address("fe80::1", 2)]))])
        #expect(state.disappeared(key, on: eth0v4) == [])
        #expect(state.disappeared(key, on: eth0v6) == [.removed(instanceName: "Kitchen", type: .debug, domain: "local")])
        #expect(state.disappeared(key, on: eth0v6) == [])
        #expect(state.reportedServices.isEmpty)
    }

    @Test func unresolvedServicesAreNeverReported() {
        var state = State()
        state.appeared(key, on: eth0v4)
        #expect(state.resolutionFailed(key, on: eth0v4) == [])
        #expect(state.disappeared(key, on: eth0v4) == [])
        #expect(state.removeAll() == [])
    }

    @Test func aFailedSlotKeepsTheServiceUntilItsLastSlotGoes() {
        var state = State()
        for slot in [eth0v4, eth0v6] { state.appeared(key, on: slot) }
        _ = state.resolved(key, on: eth0v4, resolution("10.0.0.1", 2))
        // The other slot cannot be resolved: the service stays as it was.
        #expect(state.resolutionFailed(key, on: eth0v6) == [])
        // The resolved slot goes; one unresolved slot remains: still no removal.
        #expect(state.disappeared(key, on: eth0v4) == [])
        #expect(state.disappeared(key, on: eth0v6) == [.removed(instanceName: "Kitchen", type: .debug, domain: "local")])
    }

    @Test func theLatestResolutionGivesTXTAndPort() {
        var state = State()
        for slot in [eth0v4, eth0v6] { state.appeared(key, on: slot) }
        _ = state.resolved(key, on: eth0v4, resolution("10.0.0.1", 2))
        _ = state.resolved(key, on: eth0v6, resolution("fe80::1", 2))
        let newTXT: TXTRecord = ["id": "1", "nm": "Renamed"]
        #expect(
            state.resolved(key, on: eth0v6, resolution("fe80::1", 2, txt: newTXT))
                == [.updated(service([address("10.0.0.1", 2), address("fe80::1", 2)], txt: newTXT))])
    }

    @Test func daemonLossAndStopBrowsingRemoveWhatWasReported() throws {
        var state = State()
        let other = ServiceKey(instanceName: "Printer", type: try ServiceType("_ipp._tcp"), domain: "local")
        let unresolved = ServiceKey(instanceName: "Pending", type: .debug, domain: "local")
        for k in [key, other, unresolved] { state.appeared(k, on: eth0v4) }
        _ = state.resolved(key, on: eth0v4, resolution("10.0.0.1", 2))
        _ = state.resolved(other, on: eth0v4, resolution("10.0.0.2", 2))
        #expect(state.removeAll(ofType: try ServiceType("_ipp._tcp")) == [.removed(instanceName: "Printer", type: other.type, domain: "local")])
        #expect(state.removeAll() == [.removed(instanceName: "Kitchen", type: .debug, domain: "local")])
        #expect(state.reportedServices.isEmpty)
        // After a daemon restart the same service is found again.
        state.appeared(key, on: eth0v4)
        #expect(state.resolved(key, on: eth0v4, resolution("10.0.0.1", 2)) == [.found(service([address("10.0.0.1", 2)]))])
    }

    @Test func aSlotMayCarrySeveralAddressesAndTheSameAddressFromTwoSlotsIsListedOnce() {
        // dns_sd.h backends resolve once per interface and query the host's A and AAAA records there: one slot,
        // several addresses.
        var state = State()
        state.appeared(key, on: eth0v4)
        state.appeared(key, on: wlan0v4)
        let both = ServiceResolution(
            hostName: "hosta.local", addresses: [address("fe80::1", 2), address("10.0.0.1", 2)], port: 7000, txt: ["id": "1"])
        #expect(state.resolved(key, on: eth0v4, both) == [.found(service([address("10.0.0.1", 2), address("fe80::1", 2)]))])
        // The second slot repeats one of them: nothing new.
        #expect(state.resolved(key, on: wlan0v4, resolution("10.0.0.1", 2)) == [])
        // The first loses its IPv6 address; the second still holds the IPv4 one.
        #expect(
            state.resolved(key, on: eth0v4, ServiceResolution(hostName: "hosta.local", addresses: [], port: 7000, txt: ["id": "1"]))
                == [.updated(service([address("10.0.0.1", 2)]))])
    }

    @Test func theSameNameInTwoDomainsIsTwoServicesAndStoppingOneDomainKeepsTheOther() throws {
        var state = State()
        let wideArea = ServiceKey(instanceName: "Kitchen", type: .debug, domain: "parley.test")
        state.appeared(key, on: eth0v4)
        state.appeared(wideArea, on: eth0v4)
        #expect(state.resolved(key, on: eth0v4, resolution("10.0.0.1", 2)).count == 1)
        let found = state.resolved(wideArea, on: eth0v4, resolution("10.0.9.1", 2))
        guard case .found(let service) = found.first else {
            Issue.record("the wide-area service was not reported found: \(found)")
            return
        }
        #expect(service.domain == "parley.test")
        #expect(service.id != self.service([address("10.0.0.1", 2)]).id)
        // A final dot and case do not make another domain.
        #expect(state.removeAll(ofType: .debug, domain: "Parley.Test.") == [.removed(instanceName: "Kitchen", type: .debug, domain: "parley.test")])
        #expect(state.reportedServices.map(\.domain) == ["local"])
    }
}
