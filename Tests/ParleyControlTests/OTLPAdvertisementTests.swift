import Parley
import ParleyControl
import Testing

@Suite("What parleyd advertises of its OTLP receiver, and the endpoint a client reads back")
struct OTLPAdvertisementTests {
    static func service(_ txt: TXTRecord, addresses: [ResolvedAddress], host: String = "kitchen.local") -> DiscoveredService {
        DiscoveredService(instanceName: "kitchen", type: .debug, domain: "local", hostName: host, addresses: addresses, port: 7206, txt: txt)
    }

    static func address(_ host: String, _ family: ResolvedAddress.Family, linkLocal: Bool = false) -> ResolvedAddress {
        ResolvedAddress(host: host, family: family, interfaceIndex: 2, interfaceName: "eth0", isLinkLocal: linkLocal)
    }

    @Test("a receiver on loopback is not advertised; on every address its port is; on one address that address and port")
    func txtValues() {
        #expect(OTLPAdvertisement.txtValue(host: "127.0.0.1", port: 4318) == nil)
        #expect(OTLPAdvertisement.txtValue(host: "::1", port: 4318) == nil)
        #expect(OTLPAdvertisement.txtValue(host: "0.0.0.0", port: 4318) == "4318")
        #expect(OTLPAdvertisement.txtValue(host: "::", port: 43181) == "43181")
        #expect(OTLPAdvertisement.txtValue(host: "192.168.1.20", port: 4318) == "192.168.1.20:4318")
        #expect(OTLPAdvertisement.txtValue(host: "fd00::20", port: 4318) == "[fd00::20]:4318")
    }

    @Test("a port alone is reached at the service's IPv4 address, else a routable IPv6 one, else its host name; never link-local")
    func endpointOfAPort() {
        let both = Self.service(["otlp": "4318"], addresses: [Self.address("fe80::1", .ipv6, linkLocal: true), Self.address("fd00::20", .ipv6), Self.address("192.168.1.20", .ipv4)])
        #expect(OTLPAdvertisement.endpoint(of: both) == "http://192.168.1.20:4318")
        let six = Self.service(["otlp": "4318"], addresses: [Self.address("fe80::1", .ipv6, linkLocal: true), Self.address("fd00::20", .ipv6)])
        #expect(OTLPAdvertisement.endpoint(of: six) == "http://[fd00::20]:4318")
        let linkLocalOnly = Self.service(["otlp": "4318"], addresses: [Self.address("fe80::1", .ipv6, linkLocal: true)], host: "kitchen.local.")
        #expect(OTLPAdvertisement.endpoint(of: linkLocalOnly) == "http://kitchen.local:4318")
    }

    @Test("an address and port is taken as advertised; no key, or a value parleyd does not write, is no endpoint")
    func endpointOfAnAddress() {
        let addresses = [Self.address("192.168.1.20", .ipv4)]
        #expect(OTLPAdvertisement.endpoint(of: Self.service(["otlp": "10.0.0.5:4318"], addresses: addresses)) == "http://10.0.0.5:4318")
        #expect(OTLPAdvertisement.endpoint(of: Self.service(["otlp": "[fd00::5]:4318"], addresses: addresses)) == "http://[fd00::5]:4318")
        #expect(OTLPAdvertisement.endpoint(of: Self.service(["nm": "kitchen"], addresses: addresses)) == nil)
        for junk in ["", "0", "70000", "kitchen", "10.0.0.5", "-1"] {
            #expect(OTLPAdvertisement.endpoint(of: Self.service(["otlp": junk], addresses: addresses)) == nil, "\(junk)")
        }
    }
}
