import Foundation
import Testing
import ParleyTestSupport

/// Network changes that parleyd must ride out without a restart: a link going down and up, an address moving, as a
/// laptop waking or Wi-Fi roaming does. parleyd on host A and on host B of a two-host lab (a real avahi-daemon in each)
/// are connected; the lab then changes A's network, and the test waits for what parleyd logs and for its peer gate.
@Suite("Network changes in a two-host lab", .serialized, .timeLimit(.minutes(3)))
struct NetworkChangeLabTests {
    typealias Daemon = DaemonLabTests

    /// How often `text` occurs in `log`.
    static func occurrences(of text: String, in log: String) -> Int {
        log.components(separatedBy: text).count - 1
    }

    static let closing = "network change: closing a connection that can no longer carry anything"

    /// Waits until `daemon` has logged `closing` more often than `before` times.
    static func waitForClose(_ daemon: Daemon.LabProcess, after before: Int) async throws {
        try await daemon.waitFor("a connection closed by the network change", timeout: .seconds(15)) { _, log in
            occurrences(of: closing, in: log) > before ? true : nil
        }
    }

    /// Waits until `daemon` logs a new connection (its `peer connected` lines beyond the first `before`, and with
    /// `containing` in the line if given); returns the seconds since `start`, taken when the line arrives (before
    /// any parleyctl is started: under load, starting one takes a good part of a second).
    static func waitForConnection(
        _ daemon: Daemon.LabProcess, after before: Int, containing text: String = "", since start: ContinuousClock.Instant
    ) async throws -> Double {
        try await daemon.waitFor("a new connection", timeout: .seconds(30)) { _, log in
            let lines = log.components(separatedBy: "\n").filter { $0.contains("peer connected") }
            // (Not `contains("")`: a string does not contain the empty string.)
            return lines.dropFirst(before).contains { text.isEmpty || $0.contains(text) } ? true : nil
        }
        return Daemon.seconds(since: start)
    }

    /// Both parleyd connected to each other: each one's peer gate opens for the other. Returns B's view of hosta
    /// (`parleyctl peers --json` lines).
    static func waitUntilReconnected(_ lab: NetnsLab) async throws -> String {
        async let onB = Daemon.parleyctl(
            lab, .b, ["peers", "--json", "--wait-for", "hosta", "--wait", "30", "--socket", Daemon.socket], timeout: .seconds(40))
        async let onA = Daemon.parleyctl(
            lab, .a, ["peers", "--wait-for", "hostb", "--wait", "30", "--socket", Daemon.socket], timeout: .seconds(40))
        let (b, a) = try await (onB, onA)
        #expect(b.status == 0, "B did not reconnect to hosta: \(b)")
        #expect(a.status == 0, "A did not reconnect to hostb: \(a)")
        return b.stdout
    }

    static func connections(in log: String) -> Int { occurrences(of: "peer connected", in: log) }

    @Test("a link that goes down closes the connections on it at once; once it is up again both parleyd reconnect within 5 s")
    func linkDownAndUp() async throws {
        try await NetnsLab.with { lab in
            let a = try await Daemon.parleyd(lab, .a)
            let b = try await Daemon.parleyd(lab, .b)
            _ = try await Daemon.waitForPeer(lab, .b, "hosta", timeout: .seconds(20))
            _ = try await Daemon.waitForPeer(lab, .a, "hostb", timeout: .seconds(20))
            let (closedOnA, closedOnB) = (Self.occurrences(of: Self.closing, in: a.stderr), Self.occurrences(of: Self.closing, in: b.stderr))

            // A's end goes down, B's end loses its carrier: each side closes the connection at once (not after
            // the heartbeat timeout).
            try await lab.link(.a, "down")
            try await Self.waitForClose(a, after: closedOnA)
            try await Self.waitForClose(b, after: closedOnB)
            // Over IPv4 the interface went down; over IPv6 link-local the address itself went with the link.
            #expect(a.stderr.contains("interface \(lab.interface(.a)) went down") || a.stderr.contains("went away"), "\(a.stderr)")
            #expect(try await Daemon.peerNames(lab, .b).isEmpty)

            let readvertised = "advertising on the ones usable now interfaces=\(lab.interface(.a))"
            let readvertisedBefore = Self.occurrences(of: readvertised, in: a.stderr)
            let connectedOnB = Self.connections(in: b.stderr)
            let up = ContinuousClock.now
            try await lab.link(.a, "up")
            let seconds = try await Self.waitForConnection(b, after: connectedOnB, since: up)
            _ = try await Self.waitUntilReconnected(lab)
            print("NetworkChangeLabTests: connected again \(seconds) s after the link came back up")
            #expect(seconds < 5, "reconnecting took \(seconds) s\nA: \(a.stderr.suffix(3000))\nB: \(b.stderr.suffix(3000))")
            // A advertised on the interface again once it was back, and B's avahi-daemon resolves A's service.
            #expect(Self.occurrences(of: readvertised, in: a.stderr) > readvertisedBefore, "\(a.stderr.suffix(3000))")
            #expect(!(try await Daemon.browse(lab, .b, "hosta")).isEmpty)
        }
    }

    @Test("an address that moves: A closes the connection on its old address, B finds A's new one, both reconnect within 5 s")
    func addressChange() async throws {
        // IPv4 only: with IPv6 link-local addresses the hosts could simply reconnect over those.
        try await NetnsLab.with(.init(ipv4Only: true)) { lab in
            let a = try await Daemon.parleyd(lab, .a)
            let b = try await Daemon.parleyd(lab, .b)
            _ = try await Daemon.waitForPeer(lab, .b, "hosta", timeout: .seconds(20))
            _ = try await Daemon.waitForPeer(lab, .a, "hostb", timeout: .seconds(20))
            let old = try await lab.ipv4(.a)
            let closedOnA = Self.occurrences(of: Self.closing, in: a.stderr)

            let start = ContinuousClock.now
            let new = try await lab.readdress(.a)
            try await Self.waitForClose(a, after: closedOnA)
            #expect(a.stderr.contains("this node's address \(old) went away"), "\(a.stderr)")
            // B cannot hear that close (it left from an address that no longer exists): B's old connection stays
            // until its heartbeat finds it silent. The test waits for the connection B then has to A's new
            // address, whoever dialled it.
            let seconds = try await Self.waitForConnection(b, after: 0, containing: "remote=\(new):", since: start)
            let listing = try await Self.waitUntilReconnected(lab)
            print("NetworkChangeLabTests: connected again \(seconds) s after A's address moved from \(old) to \(new)")
            #expect(seconds < 5, "reconnecting took \(seconds) s\nA: \(a.stderr.suffix(3000))\nB: \(b.stderr.suffix(3000))")
            #expect(listing.contains(new) && !listing.contains("\"\(old):"), "\(listing)\nA: \(a.stderr.suffix(4000))\nB: \(b.stderr.suffix(4000))")
            // No storm of attempts while B still held the old connection: a connection refused right after its
            // handshake counts as a failed attempt and is retried after a backoff.
            let refusals = Self.occurrences(of: "peer-id-in-use", in: a.stderr)
            #expect(refusals < 10, "A was refused \(refusals) times")
            #expect(try await Daemon.browse(lab, .b, "hosta").contains { $0.contains(";\(new);") })
        }
    }
}
