import Foundation
import ParleyTestSupport

/// A built executable run as a child process. Its standard output and error go to files, so that reading them
/// never blocks and a chatty child never fills a pipe; every wait polls with `Task.sleep`, so no thread of Swift's
/// cooperative pool is ever blocked. The process is killed on deinit if still running.
final class Child: @unchecked Sendable {
    // @unchecked: every stored property is a `let` set in init. `Process` is only asked, after `run()`, for
    // isRunning / processIdentifier / terminationStatus / terminationReason, which read state Foundation
    // updates under its own lock; the files are only read.
    let process: Process
    let name: String
    private let stdoutURL: URL
    private let stderrURL: URL

    init(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) throws {
        // A bare name is a built product; an absolute path (a shell) is used as is.
        let url = executable.hasPrefix("/") ? URL(fileURLWithPath: executable) : PeerProcess.productsDirectory.appendingPathComponent(executable)
        guard FileManager.default.isExecutableFile(atPath: url.path) else {
            throw PeerProcessError("\(url.path) is not built; run `swift build` first")
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("parleyctl-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        stdoutURL = directory.appendingPathComponent("stdout")
        stderrURL = directory.appendingPathComponent("stderr")
        _ = FileManager.default.createFile(atPath: stdoutURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: stderrURL.path, contents: nil)
        process = Process()
        process.executableURL = url
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = try FileHandle(forWritingTo: stdoutURL)
        process.standardError = try FileHandle(forWritingTo: stderrURL)
        name = ([executable] + arguments).joined(separator: " ")
        try process.run()
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        try? FileManager.default.removeItem(at: stdoutURL.deletingLastPathComponent())
    }

    var stdout: String { (try? String(contentsOf: stdoutURL, encoding: .utf8)) ?? "" }
    var stderr: String { (try? String(contentsOf: stderrURL, encoding: .utf8)) ?? "" }

    /// Waits for the child to exit by itself and returns its exit status; kills it and fails after `timeout`.
    func exitStatus(within timeout: Duration = .seconds(30)) async throws -> Int32 {
        let deadline = ContinuousClock.now + timeout
        while process.isRunning {
            guard ContinuousClock.now < deadline else {
                kill(process.processIdentifier, SIGKILL)
                throw PeerProcessError("`\(name)` still running after \(timeout); killed. stdout: \(stdout) stderr: \(stderr)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        // isRunning turns false when the exit has been reaped; the status is set by then.
        return process.terminationReason == .exit ? process.terminationStatus : 128 + process.terminationStatus
    }

    /// Polls standard output (or error) until `extract` finds what it wants; fails if the child exits first or
    /// after `timeout`.
    func waitFor<T>(
        in stream: KeyPath<Child, String> = \.stdout, timeout: Duration = .seconds(20), _ extract: (String) -> T?
    ) async throws -> T {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let found = extract(self[keyPath: stream]) { return found }
            guard process.isRunning else {
                throw PeerProcessError("`\(name)` exited (\(process.terminationStatus)) first. stdout: \(stdout) stderr: \(stderr)")
            }
            guard ContinuousClock.now < deadline else {
                throw PeerProcessError("`\(name)` did not print what was expected within \(timeout). stdout: \(stdout) stderr: \(stderr)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Sends `signal` and waits (bounded) for the exit; SIGKILL if it does not come.
    func stop(_ signal: Int32 = SIGTERM, within timeout: Duration = .seconds(5)) async throws -> Int32 {
        if process.isRunning { kill(process.processIdentifier, signal) }
        return try await exitStatus(within: timeout)
    }

    /// Runs `executable` to completion (bounded) and returns its status and output.
    static func run(
        _ executable: String, _ arguments: [String], timeout: Duration = .seconds(30)
    ) async throws -> (status: Int32, stdout: String, stderr: String) {
        let child = try Child(executable, arguments)
        let status = try await child.exitStatus(within: timeout)
        return (status, child.stdout, child.stderr)
    }
}

/// The first number after `prefix` in `text`.
func number(after prefix: String, in text: String) -> Int? {
    guard let range = text.range(of: prefix) else { return nil }
    let digits = text[range.upperBound...].prefix { $0.isNumber }
    return Int(digits)
}
