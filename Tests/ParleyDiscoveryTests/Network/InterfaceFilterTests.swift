import ParleyDiscovery
import Testing

@Suite("Interface filter")
struct InterfaceFilterTests {
    @Test("by default every interface but the usual virtual ones")
    func defaults() {
        let filter = InterfaceFilter.standard
        for name in ["eth0", "enp3s0", "wlan0", "wlp2s0", "lab7a"] { #expect(filter.admits(name), "\(name)") }
        for name in ["docker0", "br-1a2b3c", "veth12ab", "virbr0", "tun0", "wg0", "tailscale0", "zt0abc", "utun3", "awdl0", "llw0"] {
            #expect(!filter.admits(name), "\(name)")
        }
    }

    @Test("an allow list decides alone, with only the explicit deny list after it")
    func allowList() {
        let filter = InterfaceFilter(allow: ["eth*", "docker0"])
        #expect(filter.admits("eth1"))
        #expect(filter.admits("docker0"), "named in the allow list, the default deny list is not in the way")
        #expect(!filter.admits("wlan0"))
        let both = InterfaceFilter(allow: ["eth*"], deny: ["eth1"])
        #expect(both.admits("eth0"))
        #expect(!both.admits("eth1"), "deny wins over allow")
    }

    @Test("an explicit deny list replaces the default one; loopback is always accepted for listening")
    func denyList() {
        let filter = InterfaceFilter(deny: ["wl?0"])
        #expect(filter.admits("docker0"))
        #expect(!filter.admits("wlp0"))
        #expect(InterfaceFilter(allow: ["eth0"]).admitsListening(on: "lo", isLoopback: true))
        #expect(!InterfaceFilter(allow: ["eth0"]).admitsListening(on: "wlan0", isLoopback: false))
        #expect(InterfaceFilter.all.admits("docker0"))
    }

    @Test("patterns a configuration cannot mean are named")
    func invalidPatterns() {
        #expect(InterfaceFilter.invalidPattern(in: ["eth0", "wl*"]) == nil)
        #expect(InterfaceFilter.invalidPattern(in: ["eth0", ""]) == "an empty pattern")
        #expect(InterfaceFilter.invalidPattern(in: ["eth 0"])?.contains("space") == true)
    }

    @Test("a snapshot of this machine holds loopback with 127.0.0.1, and finds the interface holding an address")
    func snapshot() throws {
        let snapshot = NetworkSnapshot.current()
        let loopback = try #require(snapshot.interfaces.first { $0.isLoopback })
        #expect(loopback.addresses.contains { $0.host == "127.0.0.1" })
        #expect(snapshot.interface(holding: "127.0.0.1")?.name == loopback.name)
        #expect(snapshot.interface(holding: "::ffff:127.0.0.1")?.name == loopback.name)
        #expect(snapshot.interface(holding: "192.0.2.123") == nil)
        #expect(snapshot.usable(by: .all).allSatisfy { !$0.isLoopback && $0.isUp })
    }
}
