import Foundation
import Synchronization

/// Everything a child process writes to one pipe, collected as it arrives (Foundation's reader thread drains the
/// pipe, so a chatty child never blocks on a full one), with the tasks waiting for something in it woken as soon as
/// it shows up: waiting is an event, not a poll.
public final class OutputCollector: Sendable {
    private struct Waiter {
        var isSatisfied: @Sendable (String) -> Bool
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var text = ""
        var ended = false
        var waiters: [UInt64: Waiter] = [:]
        var next: UInt64 = 0
    }

    /// Give `pipe.fileHandleForWriting` to the child (and close it here once the child runs).
    public let pipe = Pipe()
    private let state = Mutex(State())

    public init() {
        pipe.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            if data.isEmpty {
                handle.readabilityHandler = nil
                self?.end()
            } else {
                self?.append(String(decoding: data, as: UTF8.self))
            }
        }
    }

    /// What arrived so far.
    public var text: String { state.withLock { $0.text } }

    /// Returns once `isSatisfied` holds for the text (at once if it does already). Throws ``OutputEnded`` if the
    /// writer closes the pipe (exits) first, ``TestTimeout`` after `timeout`.
    public func wait(
        for what: String, timeout: Duration, until isSatisfied: @escaping @Sendable (String) -> Bool
    ) async throws {
        let token = state.withLock { state in
            state.next += 1
            return state.next
        }
        try await withDeadline(timeout, what: what) {
            try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                    let now: Result<Void, any Error>? = self.state.withLock { state in
                        if isSatisfied(state.text) { return .success(()) }
                        if state.ended { return .failure(OutputEnded()) }
                        if Task.isCancelled { return .failure(CancellationError()) }
                        state.waiters[token] = Waiter(isSatisfied: isSatisfied, continuation: continuation)
                        return nil
                    }
                    if let now { continuation.resume(with: now) }
                }
            } onCancel: {
                let waiter = self.state.withLock { $0.waiters.removeValue(forKey: token) }
                waiter?.continuation.resume(throwing: CancellationError())
            }
        }
    }

    /// Returns once the writer has closed its end (or after `timeout`).
    public func waitForEnd(timeout: Duration) async {
        try? await wait(for: "the end of the output", timeout: timeout) { _ in false }
    }

    private func append(_ chunk: String) {
        let satisfied = state.withLock { state -> [Waiter] in
            state.text += chunk
            let text = state.text
            let ready = state.waiters.filter { $0.value.isSatisfied(text) }
            for token in ready.keys { state.waiters[token] = nil }
            return Array(ready.values)
        }
        for waiter in satisfied { waiter.continuation.resume() }
    }

    private func end() {
        let left = state.withLock { state in
            state.ended = true
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for waiter in left { waiter.continuation.resume(throwing: OutputEnded()) }
    }
}

/// The writer closed its end (the child exited) before the awaited output came.
public struct OutputEnded: Error, CustomStringConvertible {
    public var description: String { "the output ended first" }
}

/// How a child process ended, delivered by its termination handler.
public final class ExitWatch: Sendable {
    private let status = Mutex<(Int32?, [CheckedContinuation<Int32, Never>])>((nil, []))

    public init() {}

    /// Call from the process's termination handler (set before it runs).
    public func exited(_ process: Process) {
        let code = process.terminationReason == .exit ? process.terminationStatus : 128 + process.terminationStatus
        let waiters = status.withLock { state in
            state.0 = code
            defer { state.1.removeAll() }
            return state.1
        }
        for waiter in waiters { waiter.resume(returning: code) }
    }

    /// The exit status (128 + signal when killed), once the process has ended.
    public func wait() async -> Int32 {
        await withCheckedContinuation { continuation in
            let now = status.withLock { state -> Int32? in
                if let code = state.0 { return code }
                state.1.append(continuation)
                return nil
            }
            if let now { continuation.resume(returning: now) }
        }
    }
}

/// A built executable (or an absolute path) run as a child process. Its standard output and error are collected
/// as they arrive (``OutputCollector``); waiting for output or for the exit is waiting for an event. A child still
/// running on deinit is killed.
public final class ChildProcess: @unchecked Sendable {
    // @unchecked: every stored property is a `let` set in init. After `run()`, `Process` is only asked for
    // isRunning / processIdentifier, which Foundation keeps under its own lock; the collectors are Sendable.
    public let process: Process
    public let name: String
    private let output = OutputCollector()
    private let errors = OutputCollector()
    private let exit = ExitWatch()

    public init(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) throws {
        let url = executable.hasPrefix("/") ? URL(fileURLWithPath: executable) : PeerProcess.productsDirectory.appendingPathComponent(executable)
        guard FileManager.default.isExecutableFile(atPath: url.path) else {
            throw PeerProcessError("\(url.path) is not built; run `swift build --build-tests` first")
        }
        process = Process()
        process.executableURL = url
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = output.pipe.fileHandleForWriting
        process.standardError = errors.pipe.fileHandleForWriting
        let exit = self.exit
        process.terminationHandler = { exit.exited($0) }
        name = ([url.lastPathComponent] + arguments).joined(separator: " ")
        try process.run()
        // The child holds the write ends now; ours would keep the pipes from ever reporting their end.
        try output.pipe.fileHandleForWriting.close()
        try errors.pipe.fileHandleForWriting.close()
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    public var pid: Int32 { process.processIdentifier }
    public var isRunning: Bool { process.isRunning }
    public var stdout: String { output.text }
    public var stderr: String { errors.text }

    /// Waits for the child to exit and returns its status (128 + signal when killed); kills it and throws after
    /// `timeout`.
    public func exitStatus(within timeout: Duration = .seconds(30)) async throws -> Int32 {
        do {
            return try await withDeadline(timeout, what: "`\(name)` to exit") { await self.exit.wait() }
        } catch let timeout as TestTimeout {
            kill(process.processIdentifier, SIGKILL)
            throw PeerProcessError("`\(name)` \(timeout); killed. stdout: \(stdout.suffix(2000)) stderr: \(stderr.suffix(2000))")
        }
    }

    /// Waits until standard output (or error) holds what `extract` looks for, and returns what it found; throws if
    /// the child closes that stream (exits) first, or after `timeout`.
    public func waitFor<T>(
        in stream: KeyPath<ChildProcess, String> = \.stdout, timeout: Duration = .seconds(20), _ extract: @escaping @Sendable (String) -> T?
    ) async throws -> T {
        let collector = stream == \ChildProcess.stderr ? errors : output
        do {
            try await collector.wait(for: "output of `\(name)`", timeout: timeout) { extract($0) != nil }
        } catch is OutputEnded {
            throw PeerProcessError("`\(name)` exited (\(await exit.wait())) first. stderr: \(stderr.suffix(2000))")
        } catch is TestTimeout {
            throw PeerProcessError("`\(name)` did not print what was expected within \(timeout). stderr: \(stderr.suffix(2000))")
        }
        guard let found = extract(collector.text) else {
            throw PeerProcessError("`\(name)`: what was found is gone")
        }
        return found
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
        // The exit comes before the last output may have been read: wait for both streams to end.
        await child.output.waitForEnd(timeout: .seconds(5))
        await child.errors.waitForEnd(timeout: .seconds(5))
        return (status, child.stdout, child.stderr)
    }
}
