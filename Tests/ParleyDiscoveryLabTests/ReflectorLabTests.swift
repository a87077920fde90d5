import Foundation
import Testing
import ParleyTestSupport

/// The other recipe of docs/discovery.md for a few subnets, finding peers across a router without a DNS server:
/// avahi-daemon's reflector on the router. `parley-dns-lab.sh up --reflector` builds the same two routed subnets as the
/// wide-area lab, but runs no DNS server: the router's avahi-daemon has `enable-reflector=yes` on both of its
/// interfaces, and the hosts' avahi-daemons have wide-area off. parleyd runs as on one link (mDNS only, nothing
/// configured for other subnets).
@Suite("mDNS across a router through avahi's reflector", .serialized, .timeLimit(.minutes(3)))
struct ReflectorLabTests {
    @Test("parleyd on two subnets find each other by mDNS through the router's reflector, connect across it and message each other")
    func findAndMessageThroughTheReflector() async throws {
        try await WideAreaLabTests.withLab(reflector: true) { lab in
            // What makes this lab a reflector lab and nothing more: no DNS server anywhere, the reflector on.
            let named = try await NetnsLab.run([WideAreaLabTests.script, "exec", lab.name, "r", "pgrep", "-x", "named"])
            #expect(named.status == 1, "named runs on the router (pgrep: 1 is no match): \(named.output)")
            let routerConfig = try await lab.exec("r", ["cat", "/run/parley-avahi.conf"])
            #expect(routerConfig.contains("enable-reflector=yes"), "\(routerConfig)")

            let start = ContinuousClock.now
            let a = try await lab.parleyd("a", name: "Alpha", wideArea: false)
            let b = try await lab.parleyd("b", name: "Bravo", wideArea: false)
            try await WideAreaLabTests.waitForEachOther(lab, alpha: a, bravo: b, firstWait: 30)
            print("ReflectorLabTests: connected across the router \(ContinuousClock.now - start) after the first parleyd started")

            // Each learnt of the other by mDNS (the other's .local host name, reflected from the other subnet), and
            // the connection runs between the two subnets' addresses, through the router.
            #expect(b.stderr.contains("host=hosta.local"), "B's log:\n\(b.stderr)")
            #expect(a.stderr.contains("host=hostb.local"), "A's log:\n\(a.stderr)")
            let addressOfA = try await lab.address("a")
            let connected = b.stderr.split(separator: "\n").filter { $0.contains("peer connected") }
            #expect(connected.contains { $0.contains("remote=\(addressOfA):") }, "\(connected)")

            try await WideAreaLabTests.exchangeNotes(lab, ("a", "Alpha"), ("b", "Bravo"))
        }
    }
}
