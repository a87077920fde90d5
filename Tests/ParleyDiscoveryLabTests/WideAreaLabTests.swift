import Foundation
import Synchronization
import Testing
import ParleyTestSupport

/// Wide-area DNS-SD against a real DNS server, so that peers find each other across subnets:
/// scripts/netns/parley-dns-lab.sh builds two subnets joined by a router that forwards no multicast, with BIND 9 on the
/// router authoritative for parley.test and accepting TSIG-signed updates. parleyd on each subnet registers itself by
/// DNS UPDATE and browses parley.test.
@Suite("Wide-area DNS-SD through BIND, across a router", .serialized, .timeLimit(.minutes(3)))
struct WideAreaLabTests {
    typealias LabProcess = DaemonLabTests.LabProcess
    static let script = NetnsLab.repositoryRoot.appendingPathComponent("scripts/netns/parley-dns-lab.sh").path
    private static let labCounter = Atomic<Int>(0)

    struct Lab {
        let name: String

        @discardableResult
        func run(_ arguments: [String]) async throws -> String {
            try await NetnsLab.check([WideAreaLabTests.script] + arguments)
        }

        func exec(_ host: String, _ command: [String]) async throws -> String {
            try await run(["exec", name, host] + command)
        }

        /// parleyd on `host`, registering in and browsing parley.test (with `wideArea` false: mDNS only, as on one
        /// link); returns once it is ready.
        func parleyd(_ host: String, name instance: String, wideArea: Bool = true) async throws -> LabProcess {
            let directory = DaemonLabTests.directory
            // Never the journal's format, even under systemd: the tests read parleyd's timestamps.
            var arguments = [
                "env", "-u", "JOURNAL_STREAM", "PARLEY_CONFIG=\(directory)/parleyd.json", try DaemonLabTests.binary("parleyd"),
                "--name", instance, "--control-socket", DaemonLabTests.socket, "--data-directory", directory,
                "--log-level", "info", "--web-listen", "off",
            ]
            if wideArea {
                let keyFile = try await run(["keyfile", name]).trimmingCharacters(in: .whitespacesAndNewlines)
                let server = try await run(["dns-server", name, host]).trimmingCharacters(in: .whitespacesAndNewlines)
                arguments += [
                    "--browse-domain", "parley.test", "--dns-update-domain", "parley.test",
                    "--dns-update-server", server, "--dns-update-key-file", keyFile, "--dns-update-time-to-live", "5",
                ]
            }
            _ = try await exec(host, ["sh", "-c", "mkdir -p \(directory) && echo '{}' > \(directory)/parleyd.json"])
            let daemon = try LabProcess(script: WideAreaLabTests.script, lab: name, host: host, arguments)
            try await daemon.waitUntilParleydReady()
            return daemon
        }

        /// Host `host`'s IPv4 address.
        func address(_ host: String) async throws -> String {
            try await run(["addr", name, host]).trimmingCharacters(in: .whitespacesAndNewlines)
        }

        func dig(_ arguments: [String]) async throws -> String {
            try await run(["dig", name, "+short"] + arguments)
        }
    }

    /// Builds a lab (with `reflector`, the mode where avahi's reflector on the router is the only link between the
    /// subnets), runs `body` and always takes the lab down.
    static func withLab(
        reflector: Bool = false, sourceLocation: SourceLocation = #_sourceLocation, _ body: (Lab) async throws -> Void
    ) async throws {
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
        // Numbered: the reflector suite builds its labs with this too, and suites run in parallel.
        let number = labCounter.add(1, ordering: .relaxed).newValue
        let lab = Lab(name: "wa\(String(getpid(), radix: 36))x\(number)")
        try await lab.run(["up", lab.name, "--owner", String(getpid())] + (reflector ? ["--reflector"] : []))
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
            for (host, instance) in [("a", "Alpha"), ("b", "Bravo")] { try await Self.expectRecords(lab, host: host, instance: instance) }

            // Across the router only DNS can tell them about each other; the peer gate opens when they connect.
            try await Self.waitForEachOther(lab, alpha: a, bravo: b, firstWait: 60)
            print("WideAreaLabTests: connected across the router after \(ContinuousClock.now - start)")
            #expect(b.stderr.contains("parley.test"), "B's log does not name the domain it found Alpha in")

            // A message each way, each through the sender's parleyd to the other's, across the router.
            try await Self.exchangeNotes(lab, ("a", "Alpha"), ("b", "Bravo"))

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

    @Test("a DNS server that stops answering does not hold up a clean stop: the peer is told at once, the removal is tried, then parleyd exits")
    func silentServerDoesNotHoldUpTheGoodbye() async throws {
        try await Self.withLab { lab in
            let a = try await lab.parleyd("a", name: "Alpha")
            let b = try await lab.parleyd("b", name: "Bravo")
            try await a.waitForLog("registered in DNS")
            try await Self.waitForEachOther(lab, alpha: a, bravo: b, firstWait: 60)

            // Stopped, not gone: its port stays open, so an update waits out nsupdate's timeouts (about 3 s).
            let signalNamed = { (signal: String) in try await lab.exec("r", ["sh", "-c", "kill -\(signal) $(cat /run/named/named.pid)"]) }
            _ = try await signalNamed("STOP")
            // Only what B logs from here on: its peer count may have been 0 before (at its start).
            let linesBefore = b.stderr.split(separator: "\n").count
            _ = try await lab.exec("a", ["sh", "-c", "kill -TERM $(pgrep -x parleyd)"])
            #expect(try await a.waitForExit(timeout: .seconds(30)) == 0, "parleyd on A: \(a.stderr)")
            let gaveUp = a.stderr.split(separator: "\n").first { $0.contains("cannot remove the DNS-SD records") }.map(String.init)
            let left = try await b.waitFor("Bravo's peer count back to 0", timeout: .seconds(10)) { _, log in
                log.split(separator: "\n").dropFirst(linesBefore).first { $0.contains("peer count changed") && $0.hasSuffix(" peers=0") }
                    .map(String.init)
            }
            #expect(gaveUp != nil, "A did not report the removal it could not make:\n\(a.stderr)")
            if let gaveUp, let told = Self.timestamp(left), let ended = Self.timestamp(gaveUp) {
                print("WideAreaLabTests: Bravo saw Alpha leave \(String(format: "%.2f", ended.timeIntervalSince(told))) s before Alpha gave up on the DNS server")
                #expect(told < ended, "the goodbye waited for the DNS server:\nB: \(left)\nA: \(gaveUp)")
            } else {
                Issue.record("no timestamp in B's \(left) or A's \(gaveUp ?? "nothing")")
            }

            _ = try await signalNamed("CONT")
            _ = try await lab.exec("b", ["sh", "-c", "kill -TERM $(pgrep -x parleyd)"])
            _ = try await b.waitForExit(timeout: .seconds(15))
        }
    }

    @Test("with named stopped, parleyd logs nsupdate's answer and retries after 1 s, 2 s, 4 s…; once named is back the next retry registers the records")
    func registrationRetriesWithBackoffUntilTheServerAnswers() async throws {
        try await Self.withLab { lab in
            let server = try await lab.run(["dns-server", lab.name, "a"]).trimmingCharacters(in: .whitespacesAndNewlines)
            // Its port closed: each update meets an ICMP port unreachable, which nsupdate reports at once.
            try await lab.run(["named", lab.name, "stop"])
            let a = try await lab.parleyd("a", name: "Alpha")
            let failed = "DNS registration failed; retrying"
            let firstThree = try await a.waitFor("three failed registrations", timeout: .seconds(30)) { _, log in
                let lines = log.split(separator: "\n").filter { $0.contains(failed) }
                return lines.count >= 3 ? lines.prefix(3).map(String.init) : nil
            }
            #expect(!a.stderr.contains("registered in DNS"), "\(a.stderr)")

            let restarted = ContinuousClock.now
            try await lab.run(["named", lab.name, "start"])
            let registered = try await a.waitFor("'registered in DNS'", timeout: .seconds(30)) { _, log in
                log.split(separator: "\n").first { $0.contains("registered in DNS") }.map(String.init)
            }
            print("WideAreaLabTests: registered \(ContinuousClock.now - restarted) after named started again")
            // Every failure up to the success (three while the test waited, more if named was slow to come back).
            let lines = a.stderr.split(separator: "\n").map(String.init)
            let failures = lines.prefix { !$0.contains("registered in DNS") }.filter { $0.contains(failed) }
            #expect(failures.prefix(3) == firstThree[...])
            for line in failures {
                #expect(line.contains("nsupdate exited"), "\(line)")
                #expect(line.contains("Communication with \(server)#53 failed: connection refused"), "nsupdate's answer is not in the warning: \(line)")
            }
            // The delay each failure announces doubles, and the next attempt (the next failure, or the success) came
            // no sooner, by parleyd's own timestamps.
            let delays = failures.map(Self.retryDelay)
            #expect(delays == Array([1, 2, 4, 8, 16, 32].prefix(failures.count)), "\(failures.joined(separator: "\n"))")
            let times = (failures + [registered]).map(Self.timestamp)
            let gaps = zip(times.dropFirst(), times).map { later, earlier in
                later.flatMap { later in earlier.map { later.timeIntervalSince($0) } } ?? -1
            }
            print("WideAreaLabTests: attempts \(gaps.map { String(format: "%.2f", $0) }.joined(separator: " s, ")) s apart")
            for (gap, delay) in zip(gaps, delays) {
                #expect(gap >= (delay ?? .infinity), "an attempt \(gap) s after a failure that announced \(delay ?? 0) s:\n\(failures.joined(separator: "\n"))")
            }

            let instances = try await lab.dig(["_debug._tcp.parley.test", "PTR"])
            #expect(instances.contains("Alpha._debug._tcp.parley.test."), "\(instances)")
            try await Self.expectRecords(lab, host: "a", instance: "Alpha")
        }
    }

    @Test("a node named \"Living room\" registers: its instance keeps the name, its host records use the host name Living-room")
    func nameWithASpaceRegisters() async throws {
        try await Self.withLab { lab in
            let a = try await lab.parleyd("a", name: "Living room")
            try await a.waitForLog("registered in DNS")
            #expect(!a.stderr.contains("DNS registration failed"), "\(a.stderr)")
            let instances = try await lab.dig(["_debug._tcp.parley.test", "PTR"])
            #expect(instances.contains(#"Living\032room._debug._tcp.parley.test."#), "\(instances)")
            let srv = try await lab.dig([#"Living\032room._debug._tcp.parley.test"#, "SRV"])
            #expect(srv.hasSuffix(" Living-room.parley.test.\n") || srv.hasSuffix(" Living-room.parley.test."), "\(srv)")
            let address = try await lab.address("a")
            #expect(try await lab.dig(["Living-room.parley.test", "A"]).split(separator: "\n") == [Substring(address)])

            _ = try await lab.exec("a", ["sh", "-c", "kill -TERM $(pgrep -x parleyd)"])
            #expect(try await a.waitForExit(timeout: .seconds(15)) == 0, "parleyd on A: \(a.stderr)")
            #expect(try await lab.dig(["_debug._tcp.parley.test", "PTR"]).isEmpty, "the clean stop left the PTR record")
            #expect(try await lab.dig(["Living-room.parley.test", "A"]).isEmpty, "the clean stop left the A record")
        }
    }

    /// `instance`'s SRV, TXT and A records in parley.test, as parleyd on `host` registers them: the SRV names its
    /// host, the TXT carries the same keys as on the link (the peer id among them), the A is `host`'s one address.
    static func expectRecords(_ lab: Lab, host: String, instance: String) async throws {
        let srv = try await lab.dig(["\(instance)._debug._tcp.parley.test", "SRV"])
        #expect(srv.contains("\(instance).parley.test."), "\(srv)")
        let txt = try await lab.dig(["\(instance)._debug._tcp.parley.test", "TXT"])
        #expect(txt.contains("\"id="), "\(instance)'s TXT record: \(txt)")
        let address = try await lab.address(host)
        let records = try await lab.dig(["\(instance).parley.test", "A"])
        #expect(records.split(separator: "\n") == [Substring(address)], "\(instance)'s A records: \(records)")
    }

    /// The seconds in a failure line's `retry-in="4.0 seconds"`, nil if there is none.
    static func retryDelay(_ line: String) -> Double? {
        guard let range = line.range(of: #"retry-in="([0-9.]+) seconds""#, options: .regularExpression) else { return nil }
        return Double(line[range].dropFirst(#"retry-in=""#.count).prefix { $0 != " " })
    }

    /// When parleyd wrote a log line: its leading ISO 8601 timestamp.
    static func timestamp(_ line: String) -> Date? {
        guard let first = line.split(separator: " ").first else { return nil }
        return try? Date(String(first), strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }
}

extension WideAreaLabTests {
    /// A test.Note from each parleyd to the other (`first` to `second`, then back), each seen by a `parleyctl
    /// listen` through the receiver's parleyd. Each party is (host, instance name).
    static func exchangeNotes(_ lab: Lab, _ first: (String, String), _ second: (String, String)) async throws {
        for (sender, receiver) in [(first, second), (second, first)] {
            let text = "from \(sender.1) to \(receiver.1)"
            let listener = try LabProcess(
                script: script, lab: lab.name, host: receiver.0,
                [try DaemonLabTests.binary("parleyctl"), "listen", "--json", "--type", "test.Note", "--socket", DaemonLabTests.socket])
            try await listener.waitForLog("listening for test.Note through parleyd")
            let sent = try await parleyctlIn(lab, sender.0, ["send", "test.Note", #"{"text": "\#(text)"}"#, "--to", receiver.1])
            #expect(sent.status == 0, "\(text): \(sent)")
            let line = try await listener.waitFor("the note \(text)", timeout: .seconds(10)) { out, _ in
                out.split(separator: "\n").first.map(String.init)
            }
            #expect(line.contains(#""text": "\#(text)""#), "\(line)")
            _ = try await lab.exec(receiver.0, ["kill", "-INT", try await listener.hostPID()])
            _ = try await listener.waitForExit(timeout: .seconds(5))
        }
    }

    /// Waits until Bravo (on host b) has Alpha (on host a) as a connected peer, then the other way round: each
    /// side's peer gate, `parleyctl peers --wait-for`, for `firstWait` and then 30 seconds.
    static func waitForEachOther(_ lab: WideAreaLabTests.Lab, alpha a: LabProcess, bravo b: LabProcess, firstWait: Int) async throws {
        let onB = try await parleyctlIn(lab, "b", ["peers", "--wait-for", "Alpha", "--wait", String(firstWait)])
        #expect(onB.status == 0, "B did not connect to Alpha: \(onB)\nB's log:\n\(b.stderr)")
        let onA = try await parleyctlIn(lab, "a", ["peers", "--wait-for", "Bravo", "--wait", "30"])
        #expect(onA.status == 0, "A did not connect to Bravo: \(onA)\nA's log:\n\(a.stderr)")
    }

    /// parleyctl run inside host `host` of the DNS lab.
    static func parleyctlIn(_ lab: WideAreaLabTests.Lab, _ host: String, _ arguments: [String]) async throws -> DaemonLabTests.Result {
        let process = try DaemonLabTests.LabProcess(
            script: WideAreaLabTests.script, lab: lab.name, host: host,
            [try DaemonLabTests.binary("parleyctl")] + arguments + ["--socket", DaemonLabTests.socket])
        let status = try await process.waitForExit(timeout: .seconds(90)) ?? -1
        return DaemonLabTests.Result(status: status, stdout: process.stdout, stderr: process.stderr, seconds: 0)
    }
}
