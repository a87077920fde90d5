import Foundation
import ParleyTestSupport
import Testing

/// Two `parley-test-peer discover` processes, one per lab host, each with its own avahi-daemon: the transceiver
/// advertises, browses, connects by itself and notices vanished peers.
@Suite("Auto-connect in a two-host lab", .serialized, .timeLimit(.minutes(2)))
struct AutoConnectLabTests {
    static var testPeer: String {
        URL(fileURLWithPath: NetnsLab.probePath).deletingLastPathComponent().appendingPathComponent("parley-test-peer").path
    }

    func node(_ lab: NetnsLab, _ host: NetnsLab.Host, _ name: String, _ extra: [String] = []) throws -> Probe {
        try lab.spawn(host, [Self.testPeer, "discover", name] + extra)
    }

    @Test("A and B find each other, end with one connection and exchange typed messages both ways")
    func discoverConnectExchange() async throws {
        try await NetnsLab.with { lab in
            let a = try node(lab, .a, "Alpha")
            let b = try node(lab, .b, "Bravo")
            let bSawA = try await b.waitFor("B exchanged with A", timeout: .seconds(15)) {
                $0.event == "exchanged" && $0.name == "Alpha"
            }
            #expect(bSawA.reason == "hello from Bravo")
            let aSawB = try await a.waitFor("A exchanged with B", timeout: .seconds(15)) {
                $0.event == "exchanged" && $0.name == "Bravo"
            }
            #expect(aSawB.reason == "hello from Alpha")
            // Both dialled; the duplicate is closed without the peer ever being reported gone. Wait for that state:
            // one established TCP connection left in each host.
            let settled = await lab.settlesOnOneConnection()
            #expect(settled, "the duplicate connection was not closed")
            let aConnected = a.events.filter { $0.event == "connected" }.count
            let aDisconnected = a.events.filter { $0.event == "disconnected" }.count
            let bConnected = b.events.filter { $0.event == "connected" }.count
            #expect(
                aConnected == 1 && bConnected == 1 && aDisconnected == 0,
                "A: \(a.events.map { "\($0.event) \($0.reason ?? "")" }) B: \(b.events.map { "\($0.event) \($0.reason ?? "")" })"
            )
        }
    }

    @Test("a peer killed with SIGKILL is reported disconnected within 5 s")
    func killedPeer() async throws {
        try await NetnsLab.with { lab in
            let a = try node(lab, .a, "Alpha")
            let b = try node(lab, .b, "Bravo")
            let ready = try await a.waitFor(event: "ready")
            _ = try await b.waitFor("B connected to A", timeout: .seconds(15)) { $0.event == "connected" && $0.name == "Alpha" }
            let killedAt = Date().timeIntervalSince1970 * 1000
            try await lab.exec(.a, ["kill", "-KILL", String(try #require(ready.pid))])
            let gone = try await b.waitFor("B reports A gone", timeout: .seconds(8)) {
                $0.event == "disconnected" && $0.name == "Alpha"
            }
            #expect(gone.wallMs - killedAt < 5000)
        }
    }

    @Test("a silent cut (no goodbye, no FIN, no carrier lost) is noticed by heartbeats within 5 s, not after the mDNS TTL")
    func cutLink() async throws {
        // IPv4 only, and A's packets to B dropped by a blackhole route: the link stays up on both sides (a link
        // that goes down is a network change, closed at once: NetworkChangeLabTests), so only silence tells.
        try await NetnsLab.with(.init(ipv4Only: true)) { lab in
            _ = try node(lab, .a, "Alpha")
            let b = try node(lab, .b, "Bravo")
            _ = try await b.waitFor("B connected to A", timeout: .seconds(15)) { $0.event == "connected" && $0.name == "Alpha" }
            let cutAt = Date().timeIntervalSince1970 * 1000
            try await lab.blackhole(.a, "on")
            let gone = try await b.waitFor("B reports A gone", timeout: .seconds(8)) {
                $0.event == "disconnected" && $0.name == "Alpha"
            }
            #expect(gone.wallMs - cutAt < 5000)
            #expect(gone.reason?.contains("heartbeat") == true || gone.reason?.contains("no data") == true)
        }
    }

    @Test("after a cut link heals, the peer is reconnected by itself while it is still advertised")
    func reconnectAfterOutage() async throws {
        try await NetnsLab.with { lab in
            _ = try node(lab, .a, "Alpha")
            let b = try node(lab, .b, "Bravo")
            _ = try await b.waitFor("B connected to A", timeout: .seconds(15)) { $0.event == "connected" && $0.name == "Alpha" }
            try await lab.exec(.a, ["ip", "link", "set", "dev", lab.interface(.a), "down"])
            let gone = try await b.waitFor("B reports A gone", timeout: .seconds(8)) {
                $0.event == "disconnected" && $0.name == "Alpha"
            }
            let mark = b.events.count
            try await lab.exec(.a, ["ip", "link", "set", "dev", lab.interface(.a), "up"])
            // mDNS still holds A's records (120 s lifetime), so B keeps retrying with backoff and gets through.
            let back = try await b.waitFor("B reconnected to A", timeout: .seconds(25), after: mark) {
                $0.event == "exchanged" && $0.name == "Alpha"
            }
            #expect(back.wallMs > gone.wallMs)
        }
    }

    @Test("with auto-connect off on both sides, discovery connects nobody")
    func policyNone() async throws {
        try await NetnsLab.with { lab in
            let a = try lab.spawn(.a, ["env", "PARLEY_TEST_PEER_LOG=info", Self.testPeer, "discover", "Alpha", "--no-connect"])
            let b = try lab.spawn(.b, ["env", "PARLEY_TEST_PEER_LOG=info", Self.testPeer, "discover", "Bravo", "--no-connect"])
            // Each side found the other and decided, in the same step, not to dial it: the decision is the event.
            for node in [a, b] {
                try await node.waitForLog("discovered peer service", timeout: .seconds(15))
                let line = node.stderr.split(separator: "\n").first { $0.contains("discovered peer service") } ?? ""
                #expect(line.contains("connect=no"), "\(line)")
            }
            #expect(!a.events.contains { $0.event == "connected" })
            #expect(!b.events.contains { $0.event == "connected" })
        }
    }

    @Test("with avahi-daemon absent: one clear log line, and static peers still connect")
    func noDaemonStaticPeers() async throws {
        try await NetnsLab.with(NetnsLab.Options(avahi: false)) { lab in
            let a = try node(lab, .a, "Alpha")
            _ = try await a.waitFor(event: "ready")
            let addressOfA = try await lab.ipv4(.a)
            let b = try node(lab, .b, "Bravo", ["\(addressOfA):7206"])
            try await b.waitForLog("LAN discovery is off")
            let exchanged = try await b.waitFor("B exchanged with A over the static address", timeout: .seconds(15)) {
                $0.event == "exchanged" && $0.name == "Alpha"
            }
            #expect(exchanged.reason == "hello from Bravo")
            #expect(b.stderr.components(separatedBy: "LAN discovery is off").count == 2)
            #expect(b.isRunning && a.isRunning)
        }
    }

    @Test("an IPv6-only link works: peers connect over link-local addresses with their interface scope")
    func ipv6Only() async throws {
        try await NetnsLab.with(NetnsLab.Options(ipv6Only: true)) { lab in
            _ = try node(lab, .a, "Alpha")
            let b = try node(lab, .b, "Bravo")
            let connected = try await b.waitFor("B connected to A", timeout: .seconds(20)) {
                $0.event == "connected" && $0.name == "Alpha"
            }
            // The peer address is the link-local one, e.g. [fe80::…%LABb]:7206 or the accepted side's.
            #expect(connected.reason?.contains("fe80::") == true)
            _ = try await b.waitFor("B exchanged with A", timeout: .seconds(10)) { $0.event == "exchanged" && $0.name == "Alpha" }
        }
    }
}
