import Foundation
import Parley
import ParleyTestSupport

/// parleyd as a child process: loopback only (discovery off, any free port), its control socket and data directory
/// in a directory of its own. What the tests look at is what an operator would: its log, its memory in /proc, and
/// parleyctl through the control socket.
final class DaemonProcess: Sendable {
    let child: ChildProcess
    let port: Int
    let socket: String
    let directory: URL

    /// parleyd with `config` as its config file and `arguments` added; in `directory` if given (a restart keeps the
    /// history and the peer id), else in a new one.
    init(arguments: [String] = [], config: String = "{}", directory: URL? = nil) async throws {
        self.directory = directory ?? URL(fileURLWithPath: "/tmp").appendingPathComponent("pfault-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: self.directory, withIntermediateDirectories: true)
        socket = self.directory.appendingPathComponent("parleyd.sock").path
        let configFile = self.directory.appendingPathComponent("parleyd.json")
        try Data(config.utf8).write(to: configFile)
        child = try ChildProcess(
            "parleyd",
            ["--no-discovery", "--port", "0", "--name", "faultd", "--control-socket", socket, "--data-directory", self.directory.path]
                + arguments,
            // The web debugger on a free port: tests run side by side.
            environment: ["PARLEY_CONFIG": configFile.path, "PARLEY_WEB_LISTEN": "127.0.0.1:0"]
        )
        port = try await child.waitFor(in: \.stderr) { text in
            text.split(separator: "\n").first { $0.contains("parleyd ready") }.flatMap { number(after: " port=", in: String($0)) }
        }
    }

    var pid: Int32 { child.pid }
    var endpoint: Endpoint { Endpoint(host: "127.0.0.1", port: port) }

    /// parleyd's resident memory now and at its peak.
    func memory() throws -> ProcessMemory { try ProcessMemory(pid: child.pid) }

    /// Lines of parleyd's log that contain `text`.
    func logLines(containing text: String) -> [Substring] {
        child.stderr.split(separator: "\n").filter { $0.contains(text) }
    }

    /// How many times parleyd logged the warning `message`: the lines it wrote, plus the ones its log throttle held
    /// back and counted in a `log lines held back` line (written a second after the first one held back).
    func warningCount(_ message: String) -> Int {
        let lines = child.stderr.split(separator: "\n")
        // Lines read `<time> warning parleyd: <message> key=value…`; a value with spaces is quoted.
        let written = lines.filter { $0.contains(": \(message)") }.count
        let heldBack = lines.filter { $0.contains(": log lines held back") && $0.contains("line=\"\(message)\"") }.map { line in
            line.firstMatch(of: /count=(\d+)/).flatMap { Int($0.1) } ?? 0
        }
        return written + heldBack.reduce(0, +)
    }

    func ctl(_ arguments: [String], timeout: Duration = .seconds(30)) async throws -> (status: Int32, stdout: String, stderr: String) {
        try await ChildProcess.run("parleyctl", arguments + ["--socket", socket], timeout: timeout)
    }

    /// SIGTERM, expecting a clean exit; the directory is removed unless a restart is to reuse it.
    func stop(removing: Bool = true) async throws -> Int32 {
        let status = try await child.stop(SIGTERM)
        if removing { try? FileManager.default.removeItem(at: directory) }
        return status
    }

    /// SIGKILL: no shutdown code runs.
    func kill() async throws {
        _ = try await child.stop(SIGKILL)
    }
}
