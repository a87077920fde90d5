import Foundation
import Synchronization
import Testing
import ParleyTestSupport

/// A two-host lab (network namespaces "a" and "b", each with its own D-Bus and avahi-daemon) built by
/// scripts/netns/parley-netns.sh, and the probes (ParleyDiscoveryProbe) the tests run inside it.
///
/// avahi-daemon, python-zeroconf and everything else that sends multicast only ever run inside the lab's namespaces,
/// never in the machine's own network namespace.
final class NetnsLab: Sendable {
    enum Host: String, Sendable { case a, b }

    struct Options: Sendable {
        var ipv6Only = false
        /// No IPv6 at all on the veth (not even link-local): IPv4 is the only way between the hosts.
        var ipv4Only = false
        var avahi = true
    }

    struct CommandFailed: Error, CustomStringConvertible {
        var command: [String]
        var status: Int32
        var output: String
        var description: String { "\(command.joined(separator: " ")) exited \(status): \(output)" }
    }

    static let repositoryRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let script = repositoryRoot.appendingPathComponent("scripts/netns/parley-netns.sh").path

    /// The probe binary, built next to the test bundle (the test target depends on it).
    static var probePath: String {
        if let path = ProcessInfo.processInfo.environment["PARLEY_DISCOVERY_PROBE"] { return path }
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        var directory = executable.deletingLastPathComponent()
        // On Linux the test runner is <bin>/ParleyPackageTests.xctest; be lenient about bundles.
        while !FileManager.default.fileExists(atPath: directory.appendingPathComponent("ParleyDiscoveryProbe").path),
            directory.path != "/"
        {
            directory = directory.deletingLastPathComponent()
        }
        return directory.appendingPathComponent("ParleyDiscoveryProbe").path
    }

    /// nil if a lab can be built here, else why not.
    static let unavailableReason: String? = {
        guard FileManager.default.isExecutableFile(atPath: script) else { return "\(script) is missing" }
        guard let result = try? Subprocess.run([script, "check"]) else { return "cannot run \(script)" }
        guard result.status == 0 else {
            let why = result.output.trimmingCharacters(in: .whitespacesAndNewlines)
            return why.isEmpty ? "network namespaces are unavailable" : why
        }
        guard FileManager.default.isExecutableFile(atPath: probePath) else {
            return "ParleyDiscoveryProbe was not built (looked at \(probePath))"
        }
        return nil
    }()

    private static let counter = Atomic<Int>(0)

    let name: String

    private init(name: String) { self.name = name }

    /// Builds a lab, runs `body`, and always tears the lab down (every process in it dies with it).
    /// Without root or namespaces the test is skipped with the reason, except with CI=true where that is a failure.
    static func with(
        _ options: Options = Options(), sourceLocation: SourceLocation = #_sourceLocation,
        _ body: (NetnsLab) async throws -> Void
    ) async throws {
        if let reason = unavailableReason {
            if ProcessInfo.processInfo.environment["CI"] == "true" {
                Issue.record("discovery lab unavailable with CI=true: \(reason)", sourceLocation: sourceLocation)
                return
            }
            try Test.cancel("skipped: the discovery tests need a real avahi-daemon in network namespaces: \(reason)")
        }
        let number = counter.add(1, ordering: .relaxed).newValue
        // Labs of a test run that was killed (and so could not tear them down) go first: their hosts would
        // otherwise keep their avahi-daemons running for good.
        if number == 1 { _ = try? await run([script, "sweep"]) }
        let lab = NetnsLab(name: "pd\(String(getpid(), radix: 36))x\(number)")
        var arguments = [script, "up", lab.name, "--owner", String(getpid())]
        if options.ipv6Only { arguments.append("--ipv6-only") }
        if options.ipv4Only { arguments.append("--ipv4-only") }
        if !options.avahi { arguments.append("--no-avahi") }
        do {
            try await check(arguments)
            try await body(lab)
        } catch {
            await lab.tearDown()
            throw error
        }
        await lab.tearDown()
    }

    func tearDown() async {
        _ = try? await Self.run([Self.script, "down", name])
        try? FileManager.default.removeItem(atPath: Self.systemBusLink)
    }

    /// The name of host `host`'s end of the veth pair (the interface services are seen on).
    func interface(_ host: Host) -> String { name + host.rawValue }

    func avahi(_ host: Host, _ action: String) async throws {
        try await Self.check([Self.script, "avahi", name, host.rawValue, action])
    }

    /// Takes host `host`'s veth down or brings it up (`state`: "down" or "up"); the other end loses or regains
    /// its carrier.
    func link(_ host: Host, _ state: String) async throws {
        try await Self.check([Self.script, "link", name, host.rawValue, state])
    }

    /// Drops (`state` "on") what host `host` sends to the other host's IPv4 address, or stops dropping ("off").
    func blackhole(_ host: Host, _ state: String) async throws {
        try await Self.check([Self.script, "blackhole", name, host.rawValue, state])
    }

    /// Moves host `host`'s IPv4 address to the next one in its subnet; returns the new address.
    func readdress(_ host: Host) async throws -> String {
        try await Self.check([Self.script, "readdress", name, host.rawValue]).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Waits (up to 10 s) until each host has exactly one established TCP connection: what is left once two nodes
    /// that dialled each other have closed the duplicate. False if that state never came.
    func settlesOnOneConnection() async -> Bool {
        await eventually(timeout: .seconds(10)) {
            for host in [Host.a, .b] {
                let established = try? await exec(host, ["ss", "-Htn", "state", "established"])
                guard established?.split(separator: "\n").count == 1 else { return false }
            }
            return true
        }
    }

    @discardableResult
    func exec(_ host: Host, _ command: [String]) async throws -> String {
        try await Self.check([Self.script, "exec", name, host.rawValue] + command)
    }

    /// Starts the probe inside `host` with these arguments.
    func probe(_ host: Host, _ arguments: [String], environment: [String: String] = [:]) throws -> Probe {
        var command = [Self.script, "exec", name, host.rawValue]
        if !environment.isEmpty {
            command += ["env"] + environment.map { "\($0.key)=\($0.value)" }
        }
        return try Probe(command: command + [Self.probePath] + arguments)
    }

    /// Host `host`'s IPv4 address on its veth.
    func ipv4(_ host: Host) async throws -> String {
        let output = try await exec(host, ["ip", "-4", "-o", "addr", "show", "dev", interface(host)])
        guard let field = output.split(separator: " ").drop(while: { $0 != "inet" }).dropFirst().first,
            let address = field.split(separator: "/").first
        else { throw CommandFailed(command: ["ip addr"], status: 0, output: output) }
        return String(address)
    }

    /// A D-Bus address for host `host`'s system bus, usable from this process (through /proc/PID/root), so that
    /// an in-process discovery backend can talk to the lab's avahi-daemon without leaving the lab's network.
    ///
    /// The address is the same for every lab of this process: a link, pointed at this lab's socket. libdbus reads
    /// DBUS_SYSTEM_BUS_ADDRESS once per process and keeps it, so a second lab's bus (the next backend's in-process
    /// test) can only be reached under the first one's name.
    func systemBusAddress(_ host: Host) throws -> String {
        let pidFile = "\(Self.stateRoot)/\(name)/\(host.rawValue).pid"
        let pid = try String(contentsOfFile: pidFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        let link = Self.systemBusLink
        try? FileManager.default.removeItem(atPath: link)
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: "/proc/\(pid)/root/run/dbus/system_bus_socket")
        return "unix:path=\(link)"
    }

    private static let stateRoot = ProcessInfo.processInfo.environment["PARLEY_NETNS_STATE"] ?? "/tmp/parley-netns"
    private static let systemBusLink = FileManager.default.temporaryDirectory
        .appendingPathComponent("parley-lab-system-bus-\(getpid())").path

    /// Starts any command inside `host`, its output collected as JSON-lines events.
    func spawn(_ host: Host, _ command: [String]) throws -> Probe {
        try Probe(command: [Self.script, "exec", name, host.rawValue] + command)
    }

    // MARK: - Processes

    @discardableResult
    static func check(_ command: [String]) async throws -> String {
        let result = try await run(command)
        guard result.status == 0 else { throw CommandFailed(command: command, status: result.status, output: result.output) }
        return result.output
    }

    /// Runs `command` to completion on a thread of its own: setting up a lab takes seconds, and blocking one of
    /// the two threads of Swift's cooperative pool for that long stalls every other test in the process.
    static func run(_ command: [String]) async throws -> (status: Int32, output: String) {
        try await PeerProcess.offPool { try Subprocess.run(command) }
    }
}

/// One event line of the probe (or of scripts/netns/zeroconf-peer.py, which prints the same shape).
struct ProbeEvent: Decodable, Sendable, CustomStringConvertible {
    struct Address: Decodable, Sendable {
        var host: String
        var family: String
        var interfaceIndex: Int
        var interface: String?
        var linkLocal: Bool
        var connect: String
    }
    struct Service: Decodable, Sendable {
        var name: String
        var type: String
        var domain: String
        var host: String
        var port: Int
        var txt: [[String?]]
        var addresses: [Address]

        func txtValue(_ key: String) -> String? {
            txt.first { $0.first == key }.flatMap { $0.count > 1 ? $0[1] : nil }
        }
        var txtKeys: [String] { txt.compactMap { $0.first ?? nil } }
    }
    var event: String
    var wallMs: Double
    var name: String?
    var from: String?
    var to: String?
    var reason: String?
    var pid: Int?
    var service: Service?
    var line: String = ""

    enum CodingKeys: String, CodingKey { case event, wallMs, name, from, to, reason, pid, service }

    var description: String { line }
}

/// A process running inside the lab whose stdout is JSON lines, read as they come.
final class Probe: Sendable {
    struct Timeout: Error, CustomStringConvertible {
        var waitingFor: String
        var seen: [String]
        var stderr: String
        var description: String {
            "timed out waiting for \(waitingFor); events so far:\n\(seen.joined(separator: "\n"))\nstderr:\n\(stderr)"
        }
    }

    private let process: Subprocess
    /// The probe's JSON-line events, recorded as they arrive; a wait is woken by the event it waits for.
    private let record = EventRecord<ProbeEvent>()
    private let errors = Observed("")

    init(command: [String]) throws {
        process = try Subprocess(command)
        let (record, errors, process) = (self.record, self.errors, self.process)
        Thread.detachNewThread {
            var buffer = [UInt8](repeating: 0, count: 4096)
            var partial: [UInt8] = []
            while true {
                let count = read(process.stdoutFD, &buffer, buffer.count)
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { break }
                partial.append(contentsOf: buffer[..<count])
                while let newline = partial.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = Data(partial[..<newline])
                    partial.removeSubrange(...newline)
                    if var event = try? JSONDecoder().decode(ProbeEvent.self, from: line) {
                        event.line = String(decoding: line, as: UTF8.self)
                        record.append(event)
                    }
                }
            }
            // The probe closed its output: it has ended, and no event will come any more.
            record.finish()
        }
        Thread.detachNewThread {
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = read(process.stderrFD, &buffer, buffer.count)
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { break }
                let chunk = String(decoding: buffer[..<count], as: UTF8.self)
                errors.update { $0 += chunk }
            }
            errors.finish()
        }
    }

    var events: [ProbeEvent] { record.all }
    var stderr: String { errors.value }
    var isRunning: Bool { process.isRunning }

    /// Waits for the first event (after `index`) matching `predicate`: woken by that event, or failing when the
    /// probe ends first or the time is up.
    @discardableResult
    func waitFor(
        _ what: String, timeout: Duration = .seconds(10), after index: Int = 0,
        where predicate: @escaping @Sendable (ProbeEvent) -> Bool
    ) async throws -> ProbeEvent {
        do {
            return try await record.waitFor(what, timeout: timeout, after: index, where: predicate)
        } catch where error is ObservedFinished || error is TestTimeout {
            let state = process.isRunning ? "" : " (the process exited with \(process.terminationStatus ?? -1))"
            throw Timeout(waitingFor: what + state, seen: events.map(\.line), stderr: stderr)
        }
    }

    @discardableResult
    func waitFor(event name: String, timeout: Duration = .seconds(10), after index: Int = 0) async throws -> ProbeEvent {
        try await waitFor("'\(name)'", timeout: timeout, after: index) { $0.event == name }
    }

    /// Waits until stderr contains `text`.
    func waitForLog(_ text: String, timeout: Duration = .seconds(10)) async throws {
        do {
            _ = try await errors.wait(for: "log '\(text)'", timeout: timeout) { $0.contains(text) ? true : nil }
        } catch where error is ObservedFinished || error is TestTimeout {
            throw Timeout(waitingFor: "log '\(text)'", seen: events.map(\.line), stderr: stderr)
        }
    }

    func send(_ line: String) {
        process.write(line + "\n")
    }

    /// Closes stdin (the probe then stops cleanly) and waits up to `timeout` for the process to end; kills it after.
    func finish(timeout: Duration = .seconds(5)) async {
        process.closeStdin()
        // The probe's output closes when it exits.
        await record.waitUntilFinished(timeout: timeout)
        if process.isRunning {
            process.signal(SIGKILL)
            _ = try? await PeerProcess.offPool { self.process.waitForExit() }
        }
    }
}
