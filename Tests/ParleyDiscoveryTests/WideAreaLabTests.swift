import Foundation
import Testing
import ParleyTestSupport

/// Wide-area DNS-SD against a real DNS server (issue #16): scripts/netns/parley-dns-lab.sh builds two subnets joined
/// by a router that forwards no multicast, with BIND 9 on the router authoritative for parley.test and accepting
/// TSIG-signed updates. parleyd on each subnet registers itself by DNS UPDATE and browses parley.test.
@Suite("Wide-area DNS-SD through BIND, across a router", .serialized, .timeLimit(.minutes(3)))
struct WideAreaLabTests {
    typealias LabProcess = DaemonLabTests.LabProcess
    static let script = NetnsLab.repositoryRoot.appendingPathComponent("scripts/netns/parley-dns-lab.sh").path

    struct Lab {
        let name: String

        @discardableResult
        func run(_ arguments: [String]) async throws -> String {
            try await NetnsLab.check([WideAreaLabTests.script] + arguments)
        }

        func exec(_ host: String, _ command: [String]) async throws -> String {
            try await run(["exec", name, host] + command)
        }

        /// parleyd on `host`, registering in and browsing parley.test; returns once it is ready.
        func parleyd(_ host: String, name instance: String) async throws -> LabProcess {
            let directory = DaemonLabTests.directory
            let keyFile = try await run(["keyfile", name]).trimmingCharacters(in: .whitespacesAndNewlines)
            let server = try await run(["dns-server", name, host]).trimmingCharacters(in: .whitespacesAndNewlines)
            _ = try await exec(host, ["sh", "-c", "mkdir -p \(directory) && echo '{}' > \(directory)/parleyd.json"])
            let daemon = try LabProcess(
                script: WideAreaLabTests.script, lab: name, host: host,
                ["env", "PARLEY_CONFIG=\(directory)/parleyd.json", try DaemonLabTests.binary("parleyd"),
                 "--name", instance, "--control-socket", DaemonLabTests.socket, "--data-directory", directory,
                 "--log-level", "info", "--web-listen", "off",
                 "--browse-domain", "parley.test", "--dns-update-domain", "parley.test",
                 "--dns-update-server", server, "--dns-update-key-file", keyFile, "--dns-update-time-to-live", "5"])
            try await daemon.waitForLog("parleyd ready", timeout: .seconds(15))
            return daemon
        }

        func dig(_ arguments: [String]) async throws -> String {
            try await run(["dig", name, "+short"] + arguments)
        }
    }

    static func withLab(sourceLocation: SourceLocation = #_sourceLocation, _ body: (Lab) async throws -> Void) async throws {
        var reason = NetnsLab.unavailableReason
        if reason == nil, let check = try? await NetnsLab.run([script, "check"]), check.status != 0 { reason = check.output }
        if let reason {
            if ProcessInfo.processInfo.environment["CI"] == "true" {
                Issue.record("DNS lab unavailable with CI=true: \(reason)", sourceLocation: sourceLocation)
                return
            }
            try Test.cancel("skipped: the wide-area tests need BIND and avahi-daemon in network namespaces: \(reason)")
        }
        _ = try? await NetnsLab.run([script, "sweep"])
        let lab = Lab(name: "wa\(String(getpid(), radix: 36))")
        try await lab.run(["up", lab.name, "--owner", String(getpid())])
        do {
            try await body(lab)
        } catch {
            _ = try? await lab.run(["down", lab.name])
            throw error
        }
        _ = try? await lab.run(["down", lab.name])
    }

    @Test("parleyd on two subnets register by DNS UPDATE, find each other in parley.test, message each other; a clean stop removes the records")
    func registerBrowseConnectAndRemove() async throws {
        try await Self.withLab { lab in
            let a = try await lab.parleyd("a", name: "Alpha")
            let b = try await lab.parleyd("b", name: "Bravo")
            // Both registered (each logs it once nsupdate has the server's success): the zone names both instances.
            try await a.waitForLog("registered in DNS")
            try await b.waitForLog("registered in DNS")
            let start = ContinuousClock.now
            let instances = try await lab.dig(["_debug._tcp.parley.test", "PTR"])
            #expect(instances.contains("Alpha._debug._tcp.parley.test."), "\(instances)")
            #expect(instances.contains("Bravo._debug._tcp.parley.test."), "\(instances)")
            let srv = try await lab.dig(["Alpha._debug._tcp.parley.test", "SRV"])
            #expect(srv.contains("Alpha.parley.test."), "\(srv)")

            // Across the router only DNS can tell them about each other; the peer gate opens when they connect.
            let onB = try await Self.parleyctlIn(lab, "b", ["peers", "--wait-for", "Alpha", "--wait", "60"])
            #expect(onB.status == 0, "B did not connect to Alpha: \(onB)\nB's log:\n\(b.stderr)")
            let onA = try await Self.parleyctlIn(lab, "a", ["peers", "--wait-for", "Bravo", "--wait", "30"])
            #expect(onA.status == 0, "A did not connect to Bravo: \(onA)\nA's log:\n\(a.stderr)")
            print("WideAreaLabTests: connected across the router after \(ContinuousClock.now - start)")
            #expect(b.stderr.contains("parley.test"), "B's log does not name the domain it found Alpha in")

            // A message from B through its parleyd to A's parleyd, seen by a listener on A.
            let listener = try LabProcess(
                script: WideAreaLabTests.script, lab: lab.name, host: "a",
                [try DaemonLabTests.binary("parleyctl"), "listen", "--json", "--type", "test.Note", "--socket", DaemonLabTests.socket])
            try await listener.waitForLog("listening for test.Note through parleyd")
            let sent = try await Self.parleyctlIn(lab, "b", ["send", "test.Note", #"{"text": "across"}"#, "--to", "Alpha"])
            #expect(sent.status == 0, "\(sent)")
            let line = try await listener.waitFor("the note on A", timeout: .seconds(10)) { out, _ in
                out.split(separator: "\n").first.map(String.init)
            }
            #expect(line.contains(#""text": "across""#), "\(line)")
            _ = try await lab.exec("a", ["kill", "-INT", try await listener.hostPID()])
            _ = try await listener.waitForExit(timeout: .seconds(5))

            // A clean stop removes A's records.
            _ = try await lab.exec("a", ["sh", "-c", "kill -TERM $(pgrep -x parleyd)"])
            #expect(try await a.waitForExit(timeout: .seconds(15)) == 0, "parleyd on A: \(a.stderr)")
            let after = try await lab.dig(["_debug._tcp.parley.test", "PTR"])
            #expect(!after.contains("Alpha"), "A's PTR record stayed: \(after)")
            #expect(try await lab.dig(["Alpha._debug._tcp.parley.test", "SRV"]).isEmpty)
            #expect(after.contains("Bravo"))
            _ = try await lab.exec("b", ["sh", "-c", "kill -TERM $(pgrep -x parleyd)"])
            _ = try await b.waitForExit(timeout: .seconds(15))
        }
    }
}

extension WideAreaLabTests {
    /// parleyctl run inside host `host` of the DNS lab.
    static func parleyctlIn(_ lab: WideAreaLabTests.Lab, _ host: String, _ arguments: [String]) async throws -> DaemonLabTests.Result {
        let process = try DaemonLabTests.LabProcess(
            script: WideAreaLabTests.script, lab: lab.name, host: host,
            [try DaemonLabTests.binary("parleyctl")] + arguments + ["--socket", DaemonLabTests.socket])
        let status = try await process.waitForExit(timeout: .seconds(90)) ?? -1
        return DaemonLabTests.Result(status: status, stdout: process.stdout, stderr: process.stderr, seconds: 0)
    }
}
