import Foundation
import Parley
import Synchronization

/// What parleyd writes to standard output once it is ready: one JSON object on one line (docs/operations.md,
/// "Readiness"). Harnesses wait for it instead of parsing the log.
public struct ParleydReadiness: Decodable, Sendable, Equatable {
    public var pid: Int32
    /// The TCP port for LAN peers (the one the kernel chose when parleyd was given port 0).
    public var port: Int
    public var peerId: String?
    public var name: String
    public var controlSocket: String
    /// The web debugger's address without its token; nil when it is off.
    public var web: String?
    /// The OTLP/HTTP receiver's endpoint; nil when it is off or its port was taken.
    public var otlp: String?
    public var dataDirectory: String
    public var discovery: String

    /// The readiness line among the whole lines of `output` (parleyd's standard output), once it has come.
    public static func find(in output: String) -> ParleydReadiness? {
        for line in output.split(separator: "\n") where line.hasPrefix(#"{"parleyd":"ready""#) {
            // A line still on its way is not valid JSON yet; the next chunk of output completes it.
            if let readiness = try? JSONDecoder().decode(Self.self, from: Data(line.utf8)) { return readiness }
        }
        return nil
    }
}

/// A directory for one test's files, removed once nothing holds it any more (a restarted parleyd is handed the
/// same one, so its history and peer id survive the restart).
public final class ScratchDirectory: Sendable {
    public let url: URL
    public var path: String { url.path }

    /// Under /tmp rather than `$TMPDIR`: a control socket's path must fit in `sun_path`'s 108 bytes.
    public init(prefix: String = "parley-test") throws {
        url = URL(fileURLWithPath: "/tmp").appendingPathComponent("\(prefix)-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    /// The path of `name` inside the directory.
    public func file(_ name: String) -> String { url.appendingPathComponent(name).path }

    /// Writes `text` to `name` inside the directory; returns its path.
    @discardableResult
    public func write(_ name: String, _ text: String) throws -> String {
        try Data(text.utf8).write(to: URL(fileURLWithPath: file(name)))
        return file(name)
    }

    /// An environment for parleyd that reads `config`, keeps its state and control socket here and never touches
    /// /etc/parley, /run/parley or the user's directories.
    public func parleydEnvironment(config: String, _ extra: [String: String] = [:]) -> [String: String] {
        [
            "PARLEY_CONFIG": config, "HOME": path, "XDG_RUNTIME_DIR": path,
            // Never the default /run/parley/parleyd.sock (the tests may run as root, and in parallel).
            "PARLEY_CONTROL_SOCKET": file("parleyd.sock"),
        ].merging(extra) { _, new in new }
    }

    deinit { try? FileManager.default.removeItem(at: url) }
}

/// parleyd as a child process of a test or benchmark: started with the flags and environment given (nothing of
/// this process's environment but PATH), its log (standard error) collected as it arrives, ready once it writes
/// its readiness line (``ParleydReadiness``). Waiting for a log line, the readiness or the exit is waiting for
/// an event. Killed on deinit if still running; its ``ScratchDirectory`` goes with the last process holding it.
public final class ParleydProcess: Sendable {
    public let child: ChildProcess
    /// The directory its config, control socket and data live in (a new one unless it was given one).
    public let directory: ScratchDirectory
    private let readiness = Mutex<ParleydReadiness?>(nil)

    /// Starts `executable` (a built product's name or an absolute path) with exactly `arguments`, without waiting
    /// for anything. The environment is `environment` plus PATH; HOME is `directory` unless given, and the web
    /// debugger listens on a free loopback port unless the environment or the flags choose (tests run side by side).
    public init(
        executable: String = "parleyd", arguments: [String], environment: [String: String] = [:], directory: ScratchDirectory? = nil
    ) throws {
        let directory = try directory ?? ScratchDirectory(prefix: "parleyd")
        var environment = environment
        environment["HOME"] = environment["HOME"] ?? directory.path
        environment["PARLEY_WEB_LISTEN"] = environment["PARLEY_WEB_LISTEN"] ?? "127.0.0.1:0"
        environment["PARLEY_OTLP_LISTEN"] = environment["PARLEY_OTLP_LISTEN"] ?? "127.0.0.1:0"
        child = try ChildProcess(executable, arguments, environment: environment, inheritingEnvironment: false)
        self.directory = directory
    }

    /// ``start(name:arguments:config:environment:in:executable:readyTimeout:)`` with the open-files limit
    /// (`RLIMIT_NOFILE`) set to `soft` and `hard` by `prlimit`, as systemd or a shell would set it before parleyd
    /// starts.
    public static func start(openFiles soft: Int, _ hard: Int, arguments: [String] = []) async throws -> ParleydProcess {
        let directory = try ScratchDirectory(prefix: "parleyd-nofile")
        let parleyd = PeerProcess.productsDirectory.appendingPathComponent("parleyd").path
        let wrapper = try directory.write("parleyd-limited", "#!/bin/sh\nexec /usr/bin/prlimit --nofile=\(soft):\(hard) -- '\(parleyd)' \"$@\"\n")
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: wrapper)
        return try await start(arguments: arguments, in: directory, executable: wrapper)
    }

    /// parleyd on loopback only: discovery off, any free port, its config file (`config`), control socket and
    /// data directory in `directory` (a new one unless given), `arguments` added. Returns once it is ready.
    public static func start(
        name: String = "testd", arguments: [String] = [], config: String = "{}", environment: [String: String] = [:],
        in directory: ScratchDirectory? = nil, executable: String = "parleyd", readyTimeout: Duration = .seconds(20)
    ) async throws -> ParleydProcess {
        let directory = try directory ?? ScratchDirectory(prefix: "parleyd")
        let configFile = try directory.write("parleyd.json", config)
        let daemon = try ParleydProcess(
            executable: executable,
            arguments: [
                "--no-discovery", "--port", "0", "--name", name, "--control-socket", directory.file("parleyd.sock"),
                "--data-directory", directory.path,
            ] + arguments,
            environment: ["PARLEY_CONFIG": configFile].merging(environment) { _, new in new },
            directory: directory
        )
        try await daemon.waitUntilReady(timeout: readyTimeout)
        return daemon
    }

    deinit { kill() }

    /// Waits for the readiness line; throws if parleyd exits first or after `timeout`, with its log.
    @discardableResult
    public func waitUntilReady(timeout: Duration = .seconds(20)) async throws -> ParleydReadiness {
        let found = try await child.waitFor(in: \.stdout, timeout: timeout) { ParleydReadiness.find(in: $0) }
        readiness.withLock { $0 = found }
        return found
    }

    /// The readiness line; only after ``waitUntilReady(timeout:)`` (or ``start(name:arguments:config:environment:in:executable:readyTimeout:)``).
    public var ready: ParleydReadiness {
        guard let ready = readiness.withLock({ $0 }) else {
            preconditionFailure("parleyd's readiness asked for before waitUntilReady() returned")
        }
        return ready
    }

    public var port: Int { ready.port }
    public var endpoint: Endpoint { Endpoint(host: "127.0.0.1", port: port) }
    public var controlSocket: String { ready.controlSocket }
    /// The web debugger's address (without its token), nil when it is off.
    public var webURL: String? { ready.web }
    public var peerID: String? { ready.peerId }

    public var pid: Int32 { child.pid }
    public var isRunning: Bool { child.isRunning }
    /// Everything parleyd logged so far (its standard error).
    public var log: String { child.stderr }
    /// Its standard output: the readiness line and nothing else.
    public var stdout: String { child.stdout }

    /// The lines of the log that contain `text`.
    public func logLines(containing text: String) -> [Substring] {
        log.split(separator: "\n").filter { $0.contains(text) }
    }

    /// Waits until a line of the log contains `text` and returns the first such line; throws if parleyd exits or
    /// `timeout` passes first.
    @discardableResult
    public func waitForLine(containing text: String, timeout: Duration = .seconds(20)) async throws -> String {
        try await child.waitFor(in: \.stderr, timeout: timeout) { log in
            log.split(separator: "\n").first { $0.contains(text) }.map(String.init)
        }
    }

    /// Waits for parleyd to exit and returns its status (128 + signal when killed), or nil if it still runs after
    /// `timeout` (then it is killed, after its threads' stacks are printed: what it waited for is the only clue a
    /// rare hang leaves).
    public func waitForExit(timeout: Duration) async -> Int32? {
        do {
            return try await child.exitStatus(within: timeout)
        } catch {
            print("parleyd did not exit within \(timeout): \(error)")
            return nil
        }
    }

    public func signal(_ signal: Int32) {
        if child.isRunning { Foundation.kill(child.pid, signal) }
    }

    /// Sends `signal` (SIGTERM: a graceful stop) and returns the exit status; SIGKILL and an error if parleyd is
    /// still running after `timeout`.
    @discardableResult
    public func stop(_ signal: Int32 = SIGTERM, within timeout: Duration = .seconds(10)) async throws -> Int32 {
        try await child.stop(signal, within: timeout)
    }

    /// SIGKILL if still running, without waiting (clean-up).
    public func kill() {
        signal(SIGKILL)
    }

    /// Runs `parleyctl` against this parleyd's control socket.
    public func ctl(_ arguments: [String], timeout: Duration = .seconds(30)) async throws -> (status: Int32, stdout: String, stderr: String) {
        try await ChildProcess.run("parleyctl", arguments + ["--socket", controlSocket], timeout: timeout)
    }
}
