import Foundation

/// A built executable (or an absolute path) run as a child process. Standard output and error go to files, so a
/// chatty child (parleyd logging hundreds of refused connections) never fills a pipe and reading them never
/// blocks; every wait polls with `Task.sleep`, so no thread of Swift's cooperative pool is blocked. A child still
/// running on deinit is killed.
public final class ChildProcess: @unchecked Sendable {
    // @unchecked: every stored property is a `let` set in init. After `run()`, `Process` is only asked for
    // isRunning / processIdentifier / terminationStatus / terminationReason, which Foundation keeps under its own
    // lock; the output files are only read.
    public let process: Process
    public let name: String
    private let directory: URL
    private let stdoutURL: URL
    private let stderrURL: URL

    public init(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) throws {
        let url = executable.hasPrefix("/") ? URL(fileURLWithPath: executable) : PeerProcess.productsDirectory.appendingPathComponent(executable)
        guard FileManager.default.isExecutableFile(atPath: url.path) else {
            throw PeerProcessError("\(url.path) is not built; run `swift build --build-tests` first")
        }
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("parley-child-\(UUID().uuidString.prefix(8))")
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
        name = ([url.lastPathComponent] + arguments).joined(separator: " ")
        try process.run()
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        try? FileManager.default.removeItem(at: directory)
    }

    public var pid: Int32 { process.processIdentifier }
    public var isRunning: Bool { process.isRunning }
    public var stdout: String { (try? String(contentsOf: stdoutURL, encoding: .utf8)) ?? "" }
    public var stderr: String { (try? String(contentsOf: stderrURL, encoding: .utf8)) ?? "" }

    /// Waits for the child to exit and returns its status (128 + signal when killed); kills it and throws after
    /// `timeout`.
    public func exitStatus(within timeout: Duration = .seconds(30)) async throws -> Int32 {
        let deadline = ContinuousClock.now + timeout
        while process.isRunning {
            guard ContinuousClock.now < deadline else {
                kill(process.processIdentifier, SIGKILL)
                throw PeerProcessError("`\(name)` still running after \(timeout); killed. stdout: \(stdout.suffix(2000)) stderr: \(stderr.suffix(2000))")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        return process.terminationReason == .exit ? process.terminationStatus : 128 + process.terminationStatus
    }

    /// Polls standard output or error until `extract` finds what it looks for; throws if the child exits first or
    /// after `timeout`.
    public func waitFor<T>(
        in stream: KeyPath<ChildProcess, String> = \.stdout, timeout: Duration = .seconds(20), _ extract: (String) -> T?
    ) async throws -> T {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let found = extract(self[keyPath: stream]) { return found }
            guard process.isRunning else {
                throw PeerProcessError("`\(name)` exited (\(process.terminationStatus)) first. stderr: \(stderr.suffix(2000))")
            }
            guard ContinuousClock.now < deadline else {
                throw PeerProcessError("`\(name)` did not print what was expected within \(timeout). stderr: \(stderr.suffix(2000))")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Sends `signal` and waits (bounded) for the exit; SIGKILL if it does not come.
    public func stop(_ signal: Int32 = SIGTERM, within timeout: Duration = .seconds(10)) async throws -> Int32 {
        if process.isRunning { kill(process.processIdentifier, signal) }
        return try await exitStatus(within: timeout)
    }

    /// Runs `executable` to completion (bounded) and returns its status and output.
    public static func run(
        _ executable: String, _ arguments: [String], timeout: Duration = .seconds(30)
    ) async throws -> (status: Int32, stdout: String, stderr: String) {
        let child = try ChildProcess(executable, arguments)
        let status = try await child.exitStatus(within: timeout)
        return (status, child.stdout, child.stderr)
    }
}
