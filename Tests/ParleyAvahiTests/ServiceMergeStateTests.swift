import Testing

@testable import ParleyAvahi
import ParleyDiscovery

@Suite("Merging Avahi's per-interface results")
struct ServiceMergeStateTests {
    typealias State = ServiceMergeState
    let key = State.ServiceKey(instanceName: "Kitchen", type: .debug, domain: "local")
    let eth0v4 = State.Slot(interfaceIndex: 2, family: .ipv4)
    let eth0v6 = State.Slot(interfaceIndex: 2, family: .ipv6)
    let wlan0v4 = State.Slot(interfaceIndex: 3, family: .ipv4)

    func address(_ host: String, _ index: Int32) -> ResolvedAddress {
        let v6 = host.contains(":")
        return ResolvedAddress(
            host: host, family: v6 ? .ipv6 : .ipv4, interfaceIndex: index, interfaceName: "if\(index)",
            isLinkLocal: v6 && host.hasPrefix("fe80"))
    }

    func resolution(_ host: String, _ index: Int32, txt: TXTRecord = ["id": "1"], port: UInt16 = 7000) -> State.Resolution {
        State.Resolution(hostName: "hosta.local", address: address(host, index), port: port, txt: txt)
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
        let other = State.ServiceKey(instanceName: "Printer", type: try ServiceType("_ipp._tcp"), domain: "local")
        let unresolved = State.ServiceKey(instanceName: "Pending", type: .debug, domain: "local")
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

    @Test func theSameNameInTwoDomainsIsTwoServicesAndStoppingOneDomainKeepsTheOther() throws {
        var state = State()
        let wideArea = State.ServiceKey(instanceName: "Kitchen", type: .debug, domain: "parley.test")
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
