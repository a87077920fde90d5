@testable import ParleyDNSUpdate
import ParleyDiscovery
import Testing

@Suite("The nsupdate script")
struct DNSUpdateScriptTests {
    let script = DNSUpdateScript(
        settings: DNSUpdateSettings(domain: "parley.test.", server: "10.0.0.1:5353", keyFile: "/k", ttl: 30, hostLabel: "Living room"))

    @Test("names are escaped in master-file syntax: spaces, dots, backslashes and UTF-8 as \\DDD")
    func escaping() {
        #expect(DNSUpdateScript.label("Living room") == #"Living\032room"#)
        #expect(DNSUpdateScript.label("a.b\\c") == #"a\046b\092c"#)
        #expect(DNSUpdateScript.label("é") == #"\195\169"#)
        #expect(DNSUpdateScript.quoted(Array(#"id="x"\"#.utf8)) == #""id=\"x\"\\""#)
        #expect(DNSUpdateScript.quoted([0x07]) == #""\007""#)
    }

    @Test("register replaces the instance's records in one update; deregister removes exactly this instance's PTR")
    func registerAndDeregister() {
        let advertisement = Advertisement(instanceName: "Living room", port: 7206, txt: ["id": "abc"])
        let register = script.register(
            advertisement, addresses: [InterfaceAddress(host: "10.0.0.2", family: .ipv4, isLinkLocal: false),
                                       InterfaceAddress(host: "fd00::2", family: .ipv6, isLinkLocal: false)])
        let lines = register.split(separator: "\n").map(String.init)
        #expect(lines.first == "server 10.0.0.1 5353")
        #expect(lines.contains("zone parley.test."))
        #expect(lines.contains(#"update add _debug._tcp.parley.test. 30 PTR Living\032room._debug._tcp.parley.test."#))
        #expect(lines.contains(#"update add Living\032room._debug._tcp.parley.test. 30 SRV 0 0 7206 Living\032room.parley.test."#))
        #expect(lines.contains(#"update add Living\032room._debug._tcp.parley.test. 30 TXT "id=abc""#))
        #expect(lines.contains(#"update add Living\032room.parley.test. 30 A 10.0.0.2"#))
        #expect(lines.contains(#"update add Living\032room.parley.test. 30 AAAA fd00::2"#))
        #expect(lines.last == "send")
        // The old SRV, TXT and addresses go before the new ones are added.
        #expect(lines.firstIndex(of: #"update delete Living\032room.parley.test. A"#)! < lines.firstIndex(of: #"update add Living\032room.parley.test. 30 A 10.0.0.2"#)!)

        let deregister = script.deregister(advertisement).split(separator: "\n").map(String.init)
        #expect(deregister.contains(#"update delete _debug._tcp.parley.test. PTR Living\032room._debug._tcp.parley.test."#))
        #expect(!deregister.contains { $0.hasPrefix("update add") })
        #expect(!deregister.contains("update delete _debug._tcp.parley.test. PTR"), "would remove every instance's PTR")
    }
}
