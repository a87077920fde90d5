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
        // The instance keeps its name; the host, which must be a host name, is Living-room.
        #expect(lines.contains(#"update add Living\032room._debug._tcp.parley.test. 30 SRV 0 0 7206 Living-room.parley.test."#))
        #expect(lines.contains(#"update add Living\032room._debug._tcp.parley.test. 30 TXT "id=abc""#))
        #expect(lines.contains(#"update add Living-room.parley.test. 30 A 10.0.0.2"#))
        #expect(lines.contains(#"update add Living-room.parley.test. 30 AAAA fd00::2"#))
        #expect(lines.last == "send")
        // The old SRV, TXT and addresses go before the new ones are added.
        #expect(lines.firstIndex(of: #"update delete Living-room.parley.test. A"#)! < lines.firstIndex(of: #"update add Living-room.parley.test. 30 A 10.0.0.2"#)!)

        let deregister = script.deregister(advertisement).split(separator: "\n").map(String.init)
        #expect(deregister.contains(#"update delete _debug._tcp.parley.test. PTR Living\032room._debug._tcp.parley.test."#))
        #expect(!deregister.contains { $0.hasPrefix("update add") })
        #expect(!deregister.contains("update delete _debug._tcp.parley.test. PTR"), "would remove every instance's PTR")
    }

    @Test("the host label is a valid host name made from the node's name", arguments: [
        ("Living room", "Living-room"),
        ("Alpha", "Alpha"),
        ("Küche  2. Stock", "Kuche-2-Stock"),
        ("  --kitchen_tablet--  ", "kitchen-tablet"),
        ("a.b", "a-b"),
        (String(repeating: "x", count: 62) + " yz", String(repeating: "x", count: 62)),
    ])
    func hostLabel(name: String, label: String) {
        #expect(DNSUpdateSettings.hostLabel(for: name) == label)
    }

    @Test("a name with nothing a host name may hold gets parley- and a hash of it: stable, and different for different names")
    func hostLabelFallback() {
        let first = DNSUpdateSettings.hostLabel(for: "リビング")
        #expect(first.hasPrefix("parley-") && first.count == 15 && first.dropFirst(7).allSatisfy(\.isHexDigit), "\(first)")
        #expect(DNSUpdateSettings.hostLabel(for: "リビング") == first)
        #expect(DNSUpdateSettings.hostLabel(for: "台所") != first)
    }

    @Test("the server is a host or an address with an optional port; anything that could add a line to the script is refused")
    func server() {
        #expect(DNSUpdateSettings.parseServer("10.0.0.1")! == ("10.0.0.1", nil))
        #expect(DNSUpdateSettings.parseServer("10.0.0.1:5353")! == ("10.0.0.1", 5353))
        #expect(DNSUpdateSettings.parseServer("ns1.example.org.")! == ("ns1.example.org.", nil))
        #expect(DNSUpdateSettings.parseServer("fd00::53")! == ("fd00::53", nil))
        #expect(DNSUpdateSettings.parseServer("[fd00::53]:5353")! == ("fd00::53", 5353))
        for bad in [
            "10.0.0.1\nupdate add evil.parley.test. 30 A 10.6.6.6", "ns1 example", "ns1.example.org:0", "ns1.example.org:70000",
            "ns1.example.org:53:53", "[fd00::53", "[fd00::53]x", "fd00::zz", "-ns.example", "ns..example", "", "10.0.0.1:+53",
        ] {
            #expect(DNSUpdateSettings.parseServer(bad) == nil, "\(bad.debugDescription) was accepted")
        }
    }

    @Test("a server that does not parse is never handed to nsupdate: the run fails, saying why")
    func badServerNotRun() async {
        let settings = DNSUpdateSettings(
            domain: "parley.test", server: "10.0.0.1\nupdate add evil.parley.test. 30 A 10.6.6.6", keyFile: "/k", nsupdatePath: "/nonexistent/nsupdate")
        guard case .failure(let failure) = await DNSUpdateRegistrar.run(settings: settings, script: "send\n") else {
            Issue.record("the run succeeded")
            return
        }
        #expect(failure.description.contains("is not HOST, HOST:PORT or [IPv6]:PORT; nsupdate was not run"), "\(failure)")
    }
}
