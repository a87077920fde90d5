@testable import Parley
import Testing

@Suite("Auto-connect policy and backoff")
struct AutoConnectPolicyTests {
    static func service(name: String = "Kitchen", txt: TXTRecord) -> DiscoveredService {
        DiscoveredService(
            instanceName: name, type: .debug, domain: "local", hostName: "hosta.local",
            addresses: [ResolvedAddress(host: "10.0.0.1", family: .ipv4, interfaceIndex: 2, interfaceName: "eth0", isLinkLocal: false)],
            port: 7206, txt: txt
        )
    }

    static let parley = service(txt: .parley(peerID: PeerID().rawValue, displayName: "Kitchen", requiresSecret: false))
    static let stranger = service(name: "Printer", txt: ["note": "not a Parley peer"])

    @Test(".all connects to Parley peers only; .none to nothing; .matching asks the predicate")
    func policies() {
        #expect(AutoConnectPolicy.all.admits(Self.parley))
        #expect(!AutoConnectPolicy.all.admits(Self.stranger))
        #expect(!AutoConnectPolicy.none.admits(Self.parley))
        let kitchenOnly = AutoConnectPolicy.matching { $0.txt["nm"] == "Kitchen" }
        #expect(kitchenOnly.admits(Self.parley))
        #expect(!kitchenOnly.admits(Self.stranger))
    }

    @Test("backoff doubles up to its maximum and starts over after a success; each delay is jittered into its upper half")
    func backoff() {
        var least = Backoff(initial: .milliseconds(250), maximum: .seconds(1), jitter: { 0 })
        #expect([least.delay(), least.delay(), least.delay(), least.delay()]
            == [.milliseconds(125), .milliseconds(250), .milliseconds(500), .milliseconds(500)])
        var most = Backoff(initial: .milliseconds(250), maximum: .seconds(1), jitter: { 1 })
        #expect([most.delay(), most.delay(), most.delay(), most.delay()]
            == [.milliseconds(250), .milliseconds(500), .seconds(1), .seconds(1)])
        most.reset()
        #expect(most.delay() == .milliseconds(250))
        var random = Backoff(initial: .seconds(2), maximum: .seconds(2))
        let delays = (0..<50).map { _ in random.delay() }
        #expect(delays.allSatisfy { (.seconds(1)...(.seconds(2))).contains($0) })
        #expect(Set(delays).count > 1, "fifty draws all alike: the delays are not jittered")
    }

    @Test("a connection that lasted starts the delays over and is redialled at once; one ended within stableAfter counts as a failure")
    func afterConnection() {
        var backoff = Backoff(initial: .milliseconds(250), maximum: .seconds(4), stableAfter: .seconds(2), jitter: { 1 })
        // Dials that failed before a connection do not lengthen the wait after it: its handshake worked.
        _ = (backoff.delay(), backoff.delay(), backoff.delay())
        #expect(backoff.afterConnection(lasted: .milliseconds(10)) == .milliseconds(250))
        // Short connections in a row do.
        #expect(backoff.afterConnection(lasted: .seconds(1)) == .milliseconds(500))
        #expect(backoff.afterConnection(lasted: .seconds(2)) == nil)
        #expect(backoff.delay() == .milliseconds(250), "a stable connection did not start the delays over")
    }
}
