import Foundation
import Logging
import ParleyAvahi
import ParleyDNSSD
import ParleyDiscovery
import Testing

/// A discovery backend the lab runs its behaviours against: Avahi's client library (`ParleyAvahi`), or `dns_sd.h`
/// through Avahi's compatibility library (`ParleyDNSSD`, what apps on Apple platforms use with mDNSResponder).
enum LabBackend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case avahi
    case dnssd

    var testDescription: String { rawValue }
    var factory: DiscoveryBackendFactory { self == .avahi ? .avahi : .dnssd }
    /// The probe's option choosing it.
    var probeArguments: [String] { ["--backend", rawValue] }
}

/// Discovery against real avahi-daemons, one per lab host, inside network namespaces (see NetnsLab), through each
/// backend: the same behaviours, the same expectations (the dns_sd.h backend words its events and logs as Avahi's
/// does, and renames by Avahi's rule on Linux).
/// Serialized: each test builds its own two-host lab, and the timings below assume the machine is not busy with
/// several labs at once.
@Suite("Discovery backends in a two-host lab", .serialized, .timeLimit(.minutes(2)))
struct DiscoveryBackendLabTests {
    static let parleyTXT = ["--txt", "id=4f0c7a3e-1d2b-4c5d-8e9f-a0b1c2d3e4f5", "--txt", "pv=1", "--txt", "nm=Ann",
        "--txt", "auth=0"]

    @Test("A advertises, B finds it with port, TXT and every address; A recognises its own advertisement", arguments: LabBackend.allCases)
    func advertiseAndBrowse(backend: LabBackend) async throws {
        try await NetnsLab.with { lab in
            let browser = try lab.probe(.b, backend.probeArguments + ["--browse", "-"])
            try await browser.waitFor(event: "daemonAvailable")
            let advertiser = try lab.probe(.a, backend.probeArguments + ["--advertise", "Kitchen", "--port", "7000", "--subtype", "_relay", "--browse", "-"] + Self.parleyTXT)
            let available = try await advertiser.waitFor(event: "daemonAvailable")
            let advertised = try await advertiser.waitFor(event: "advertised")
            #expect(advertised.name == "Kitchen")

            let found = try await browser.waitFor("Kitchen found") { $0.event == "found" && $0.service?.name == "Kitchen" }
            // Both the IPv4 and IPv6 results are merged into one service; wait for both.
            let complete = try await browser.waitFor("Kitchen with two addresses") {
                ($0.event == "found" || $0.event == "updated") && $0.service?.addresses.count == 2
            }
            let service = try #require(complete.service)
            #expect(service.port == 7000)
            #expect(service.host == "hosta.local")
            #expect(service.type == "_debug._tcp" && service.domain == "local")
            #expect(service.txtKeys == ["id", "pv", "nm", "auth"])
            #expect(service.txtValue("id") == "4f0c7a3e-1d2b-4c5d-8e9f-a0b1c2d3e4f5")
            #expect(service.txtValue("nm") == "Ann")
            let v4 = try #require(service.addresses.first { $0.family == "ipv4" })
            #expect(v4.host == (try await lab.ipv4(.a)))
            #expect(!v4.linkLocal && v4.connect == v4.host)
            let v6 = try #require(service.addresses.first { $0.family == "ipv6" })
            #expect(v6.linkLocal && v6.host.hasPrefix("fe80:"))
            #expect(v6.interface == lab.interface(.b))
            #expect(v6.connect == "\(v6.host)%\(lab.interface(.b))")
            #expect(v6.host == (try await lab.exec(.a, ["sh", "-c", "ip -6 -o addr show scope link | awk '{print $4}' | cut -d/ -f1"]))
                .trimmingCharacters(in: .whitespacesAndNewlines))

            // The subtype is published too (checked with Avahi's own tool).
            let subtypeBrowse = try await lab.exec(.b, ["avahi-browse", "-p", "-t", "_relay._sub._debug._tcp"])
            #expect(subtypeBrowse.contains("Kitchen"))

            // A sees its own advertisement and can recognise it by peer id.
            let own = try await advertiser.waitFor("own advertisement") { $0.event == "found" }
            #expect(own.service?.txtValue("id") == "4f0c7a3e-1d2b-4c5d-8e9f-a0b1c2d3e4f5")

            // Reported once: after a settling time there is still exactly one `found` for Kitchen on B. Real sleep:
            // "no second event" can only be observed over a window.
            try await Task.sleep(for: .seconds(1))
            #expect(browser.events.filter { $0.event == "found" && $0.service?.name == "Kitchen" }.count == 1)
            #expect(browser.events.filter { $0.event == "removed" }.isEmpty)

            let resolveMs = found.wallMs - available.wallMs
            print("discovery timing: A connected to its daemon and published -> B found it: \(Int(resolveMs)) ms;"
                + " A established (probing done) -> B found: \(Int(found.wallMs - advertised.wallMs)) ms")
            #expect(resolveMs < 3000)
            await advertiser.finish()
            await browser.finish()
        }
    }

    @Test("Removal is reported once: when A withdraws, and when an advertiser is killed", arguments: LabBackend.allCases)
    func removalIsReportedOnce(backend: LabBackend) async throws {
        try await NetnsLab.with { lab in
            let browser = try lab.probe(.b, backend.probeArguments + ["--browse", "-"])
            let advertiser = try lab.probe(.a, backend.probeArguments + ["--advertise", "Leaving", "--port", "7001"])
            try await browser.waitFor("Leaving found") { $0.event == "found" && $0.service?.name == "Leaving" }
            advertiser.send("withdraw")
            let mark = browser.events.count
            try await browser.waitFor("Leaving removed", timeout: .seconds(5), after: mark) {
                $0.event == "removed" && $0.name == "Leaving"
            }

            let doomed = try lab.probe(.a, backend.probeArguments + ["--advertise", "Doomed", "--port", "7002"])
            let started = try await doomed.waitFor(event: "started")
            try await browser.waitFor("Doomed found") { $0.event == "found" && $0.service?.name == "Doomed" }
            // SIGKILL: no goodbye from the process; avahi-daemon notices the client is gone and withdraws.
            let pid = try #require(started.pid)
            try await lab.exec(.a, ["kill", "-KILL", String(pid)])
            try await browser.waitFor("Doomed removed", timeout: .seconds(5)) {
                $0.event == "removed" && $0.name == "Doomed"
            }
            // Real sleep: a window in which no duplicate removal may come (an absence, not an event).
            try await Task.sleep(for: .seconds(1.5))
            let events = browser.events
            let leavingRemovals = events.count { $0.event == "removed" && $0.name == "Leaving" }
            let doomedRemovals = events.count { $0.event == "removed" && $0.name == "Doomed" }
            let founds = events.count { $0.event == "found" }
            #expect(leavingRemovals == 1)
            #expect(doomedRemovals == 1)
            #expect(founds == 2)
            await doomed.finish()
            await advertiser.finish()
            await browser.finish()
        }
    }

    @Test("A name taken on the network is replaced by Avahi's alternative name and reported", arguments: LabBackend.allCases)
    func remoteNameCollision(backend: LabBackend) async throws {
        try await NetnsLab.with { lab in
            let first = try lab.probe(.a, backend.probeArguments + ["--advertise", "Clash", "--port", "7003"])
            try await first.waitFor("Clash advertised") { $0.event == "advertised" && $0.name == "Clash" }
            let second = try lab.probe(.b, backend.probeArguments + ["--advertise", "Clash", "--port", "7004"])
            let watcher = try lab.probe(.b, backend.probeArguments + ["--browse", "-"])
            // mDNS decides which side yields (normally the newcomer; Avahi sometimes makes the established side
            // yield when the newcomer's announcement wins). Exactly one side must move to "Clash #2" and say so.
            // Whichever reports it first: both wait on their events, the first to come wins.
            let loser = try await withThrowingTaskGroup(of: Probe.self) { group in
                for side in [first, second] {
                    group.addTask {
                        try await side.waitFor(event: "renamed")
                        return side
                    }
                }
                defer { group.cancelAll() }
                return try #require(try await group.next(), "neither advertiser reported a rename")
            }
            let winner = loser === first ? second : first
            let renamed = try await loser.waitFor(event: "renamed")
            #expect(renamed.from == "Clash" && renamed.to == "Clash #2")
            try await loser.waitFor("Clash #2 advertised") { $0.event == "advertised" && $0.name == "Clash #2" }
            try await loser.waitForLog("alternative name")
            // Both are visible on the network, under different names.
            try await watcher.waitFor("Clash seen") { $0.event == "found" && $0.service?.name == "Clash" }
            try await watcher.waitFor("Clash #2 seen") { $0.event == "found" && $0.service?.name == "Clash #2" }
            print("collision: host \(loser === first ? "a (established first)" : "b (newcomer)") took 'Clash #2'")
            let winnerRenamed = winner.events.contains { $0.event == "renamed" }
            #expect(!winnerRenamed)
            await first.finish()
            await second.finish()
            await watcher.finish()
        }
    }

    @Test("Two advertisements of one name on the same host: the second is renamed", arguments: LabBackend.allCases)
    func localNameCollision(backend: LabBackend) async throws {
        try await NetnsLab.with { lab in
            let first = try lab.probe(.a, backend.probeArguments + ["--advertise", "Twin", "--port", "7005"])
            try await first.waitFor("Twin advertised") { $0.event == "advertised" && $0.name == "Twin" }
            let second = try lab.probe(.a, backend.probeArguments + ["--advertise", "Twin", "--port", "7006"])
            let renamed = try await second.waitFor(event: "renamed")
            #expect(renamed.from == "Twin" && renamed.to == "Twin #2")
            try await second.waitFor("Twin #2 advertised") { $0.event == "advertised" && $0.name == "Twin #2" }
            await first.finish()
            await second.finish()
        }
    }

    @Test("avahi-daemon restarted on B: B re-browses and re-advertises by itself", arguments: LabBackend.allCases)
    func daemonRestart(backend: LabBackend) async throws {
        try await NetnsLab.with { lab in
            let a = try lab.probe(.a, backend.probeArguments + ["--advertise", "Ay", "--port", "7007", "--browse", "-"])
            let b = try lab.probe(.b, backend.probeArguments + ["--advertise", "Bee", "--port", "7008", "--browse", "-"])
            try await b.waitFor("Ay found on B") { $0.event == "found" && $0.service?.name == "Ay" }
            try await b.waitFor("Bee advertised") { $0.event == "advertised" && $0.name == "Bee" }
            try await a.waitFor("Bee found on A") { $0.event == "found" && $0.service?.name == "Bee" }
            let markA = a.events.count
            let markB = b.events.count

            try await lab.avahi(.b, "restart")

            let lost = try await b.waitFor(event: "daemonUnavailable", after: markB)
            #expect(lost.reason?.contains("avahi-daemon") == true)
            try await b.waitFor("Ay removed on B", after: markB) { $0.event == "removed" && $0.name == "Ay" }
            try await b.waitFor(event: "daemonAvailable", after: markB)
            try await b.waitFor("Ay found again on B", after: markB) { $0.event == "found" && $0.service?.name == "Ay" }
            try await b.waitFor("Bee advertised again", after: markB) { $0.event == "advertised" && $0.name == "Bee" }
            try await a.waitFor("Bee found again on A", after: markA) { $0.event == "found" && $0.service?.name == "Bee" }
            try await b.waitForLog("LAN discovery paused")
            #expect(b.isRunning)
            await a.finish()
            await b.finish()
        }
    }

    @Test("avahi-daemon absent: one clear log line, the process keeps running, discovery starts when it appears", arguments: LabBackend.allCases)
    func daemonAbsent(backend: LabBackend) async throws {
        var options = NetnsLab.Options()
        options.avahi = false
        try await NetnsLab.with(options) { lab in
            let probe = try lab.probe(.a, backend.probeArguments + ["--advertise", "Patient", "--port", "7009", "--browse", "-"])
            let unavailable = try await probe.waitFor(event: "daemonUnavailable")
            #expect(unavailable.reason?.contains("avahi-daemon is not running") == true)
            try await probe.waitForLog("static peers still work")
            #expect(probe.isRunning)

            try await lab.avahi(.a, "start")
            try await probe.waitFor(event: "daemonAvailable")
            // Over the whole outage, however long it was, one line and one event: Avahi's client waits for the daemon
            // on D-Bus, the dns_sd.h backend tries again and again; neither may have repeated them.
            #expect(probe.stderr.components(separatedBy: "LAN discovery is off").count == 2, "exactly one line")
            #expect(probe.events.filter { $0.event == "daemonUnavailable" }.count == 1)
            try await probe.waitFor("advertised once the daemon is there") { $0.event == "advertised" && $0.name == "Patient" }
            try await probe.waitFor("own service found") { $0.event == "found" && $0.service?.name == "Patient" }

            // No system D-Bus at all: the client cannot even be created. Same single line; it keeps retrying. (Avahi's
            // compatibility library gives the same answer for this as for a missing daemon: its reason names both.)
            let noBus = try lab.probe(.b, backend.probeArguments + ["--advertise", "NoBus", "--port", "7010", "--log-level", "debug"],
                environment: ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/run/parley-no-such-bus"])
            let noBusEvent = try await noBus.waitFor(event: "daemonUnavailable")
            #expect(noBusEvent.reason?.contains("D-Bus") == true)
            // Two retries (Avahi's client: 1 s, then 2 s apart; dns_sd.h: 0.5 s, then 1 s), traced at debug; the
            // warning must not have come again.
            try await noBus.waitForLog("attempt=3", timeout: .seconds(10))
            #expect(noBus.isRunning)
            #expect(noBus.stderr.components(separatedBy: "LAN discovery is off").count == 2, "exactly one line")
            await probe.finish()
            await noBus.finish()
        }
    }

    @Test("IPv6-only link: the link-local address resolves with its interface, and connecting to it works", arguments: LabBackend.allCases)
    func ipv6Only(backend: LabBackend) async throws {
        var options = NetnsLab.Options()
        options.ipv6Only = true
        try await NetnsLab.with(options) { lab in
            let python = try Interop.python()
            // A listener on A's port, to prove the scoped address is connectable from B.
            let listener = try lab.spawn(.a, [python, "-c", Interop.listenerScript, "7011"])
            try await listener.waitFor(event: "listening")
            let advertiser = try lab.probe(.a, backend.probeArguments + ["--advertise", "Six", "--port", "7011"])
            let browser = try lab.probe(.b, backend.probeArguments + ["--browse", "-"])
            let found = try await browser.waitFor("Six found") { $0.event == "found" && $0.service?.name == "Six" }
            let service = try #require(found.service)
            #expect(!service.addresses.isEmpty)
            #expect(service.addresses.allSatisfy { $0.family == "ipv6" && $0.linkLocal })
            let address = try #require(service.addresses.first)
            #expect(address.interface == lab.interface(.b))
            #expect(address.connect == "\(address.host)%\(lab.interface(.b))")
            let connected = try await lab.exec(.b, [python, "-c", Interop.connectScript, address.connect, String(service.port)])
            #expect(connected.contains("connected"))
            await advertiser.finish()
            await browser.finish()
            // The listener ignores stdin; it ends with the lab.
            _ = listener
        }
    }

    @Test("Interop: python-zeroconf sees Parley's advertisement with its TXT keys", arguments: LabBackend.allCases)
    func zeroconfSeesParley(backend: LabBackend) async throws {
        try await NetnsLab.with { lab in
            let python = try Interop.python()
            let zeroconf = try lab.spawn(.b, [python, Interop.peerScript, "browse"])
            try await zeroconf.waitFor(event: "browsing")
            let advertiser = try lab.probe(.a, backend.probeArguments + ["--advertise", "Parley Peer", "--port", "7012"] + Self.parleyTXT)
            let found = try await zeroconf.waitFor("Parley Peer found by python-zeroconf", timeout: .seconds(15)) {
                $0.event == "found" && $0.service?.name == "Parley Peer"
            }
            let service = try #require(found.service)
            #expect(service.port == 7012)
            #expect(service.txtKeys == ["id", "pv", "nm", "auth"])
            #expect(service.txtValue("id") == "4f0c7a3e-1d2b-4c5d-8e9f-a0b1c2d3e4f5")
            #expect(service.txtValue("pv") == "1" && service.txtValue("nm") == "Ann" && service.txtValue("auth") == "0")
            let addressOfA = try await lab.ipv4(.a)
            #expect(service.addresses.contains { $0.host == addressOfA })
            await advertiser.finish()
            await zeroconf.finish()
        }
    }

    @Test("Interop: Parley's browser reports python-zeroconf's _debug._tcp advertisement with port and TXT", arguments: LabBackend.allCases)
    func parleySeesZeroconf(backend: LabBackend) async throws {
        try await NetnsLab.with { lab in
            let python = try Interop.python()
            let browser = try lab.probe(.b, backend.probeArguments + ["--browse", "-"])
            let address = try await lab.ipv4(.a)
            let zeroconf = try lab.spawn(
                .a, [python, Interop.peerScript, "advertise", "ZC Peer", "5151", address, "id=zc-1", "pv=1", "nm=Zed"])
            try await zeroconf.waitFor(event: "registered", timeout: .seconds(15))
            let found = try await browser.waitFor("ZC Peer found") { $0.event == "found" && $0.service?.name == "ZC Peer" }
            let service = try #require(found.service)
            #expect(service.port == 5151)
            #expect(service.host == "zcpeer.local")
            #expect(service.txtKeys == ["id", "pv", "nm"])
            #expect(service.txtValue("id") == "zc-1" && service.txtValue("nm") == "Zed")
            #expect(service.addresses.contains { $0.host == address && $0.family == "ipv4" })
            await zeroconf.finish()
            try await browser.waitFor("ZC Peer removed after it unregisters") {
                $0.event == "removed" && $0.name == "ZC Peer"
            }
            await browser.finish()
        }
    }

    /// The library itself, in this process, talking to host B's avahi-daemon over B's system bus (reached through
    /// /proc/PID/root). Only the daemon sends multicast, and it runs inside the lab.
    @Test("In-process: advertise, browse, update TXT, withdraw, stop twice", arguments: LabBackend.allCases)
    func inProcess(backend: LabBackend) async throws {
        try await NetnsLab.with { lab in
            let remote = try lab.probe(.a, backend.probeArguments + ["--advertise", "Remote", "--port", "7020", "--browse", "-"])
            try await remote.waitFor(event: "advertised")

            setenv("DBUS_SYSTEM_BUS_ADDRESS", try lab.systemBusAddress(.b), 1)
            defer { unsetenv("DBUS_SYSTEM_BUS_ADDRESS") }
            let discovery = backend.factory.makeBackend(logger: Logger(label: "parley.discovery.test"))
            let log = EventLog(discovery)
            try discovery.start()
            try discovery.start()  // harmless
            discovery.browse(.debug)
            let txt = TXTRecord.parley(peerID: "in-process-1", displayName: "Local", requiresSecret: false)
            try discovery.advertise(Advertisement(instanceName: "Local", port: 7021, txt: txt))

            try await log.waitFor("daemonAvailable") { $0 == .daemonAvailable }
            try await log.waitFor("advertised Local") { $0 == .advertised(instanceName: "Local") }
            let found = try await log.waitFor("Remote found") {
                if case .found(let service) = $0 { return service.instanceName == "Remote" }
                return false
            }
            guard case .found(let service) = found else { return }
            #expect(service.port == 7020 && service.hostName == "hosta.local")
            try await remote.waitFor("Local found by A") { $0.event == "found" && $0.service?.name == "Local" }

            // An invalid advertisement is refused before reaching Avahi.
            let tooLarge = TXTRecord(["nm": String(repeating: "x", count: 230)].map { (key: $0.key, value: $0.value) })
            #expect(throws: DiscoveryError.txtRecordTooLarge(size: 234, limit: 200)) {
                try discovery.advertise(Advertisement(instanceName: "Local", port: 7021, txt: tooLarge))
            }

            // A TXT change alone is sent as an update, and a browser that already resolved the service sees it.
            var changed = txt
            changed[TXTRecord.ParleyKey.displayName] = "Local, renamed"
            try discovery.advertise(Advertisement(instanceName: "Local", port: 7021, txt: changed))
            try await remote.waitFor("TXT update seen by A") {
                $0.event == "updated" && $0.service?.txtValue("nm") == "Local, renamed"
            }

            let mark = remote.events.count
            discovery.withdraw()
            try await remote.waitFor("Local removed on A", after: mark) { $0.event == "removed" && $0.name == "Local" }

            discovery.stop()
            discovery.stop()
            #expect(throws: DiscoveryError.stopped) { try discovery.start() }
            #expect(throws: DiscoveryError.stopped) {
                try discovery.advertise(Advertisement(instanceName: "Local", port: 7021))
            }
            await log.waitUntilFinished(timeout: .seconds(2))
            #expect(log.isFinished, "events finish on stop()")
            await remote.finish()
        }
    }
}


/// python-zeroconf and small Python helpers, run only inside lab hosts.
enum Interop {
    struct Unavailable: Error, CustomStringConvertible {
        var description: String
    }

    static let peerScript = NetnsLab.repositoryRoot.appendingPathComponent("scripts/netns/zeroconf-peer.py").path

    /// The interpreter that has python-zeroconf (an absolute path: lab hosts get a minimal PATH). Without it the
    /// test is skipped, or fails with CI=true.
    static func python() throws -> String {
        let result = try? Subprocess.run(["/usr/bin/env", "python3", "-c", "import sys, zeroconf; print(sys.executable)"])
        guard let result, result.status == 0 else {
            let reason = "python3 with python-zeroconf is needed (pip install zeroconf): \(result?.output ?? "no python3")"
            if ProcessInfo.processInfo.environment["CI"] == "true" { throw Unavailable(description: reason) }
            try Test.cancel("skipped: \(reason)")
        }
        return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static let listenerScript = """
        import json, socket, sys, time
        s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("::", int(sys.argv[1])))
        s.listen(4)
        print(json.dumps({"event": "listening", "wallMs": time.time() * 1000}), flush=True)
        while True:
            c, peer = s.accept()
            c.sendall(b"hello\\n")
            c.close()
        """

    static let connectScript = """
        import socket, sys
        c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5)
        print("connected", c.recv(16).decode().strip())
        """
}
