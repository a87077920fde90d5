import Foundation
import Synchronization

/// Everything a child process writes to one pipe, collected as it arrives by a reader thread of its own (so a
/// chatty child never blocks on a full pipe, and no thread of Swift's cooperative pool blocks in `read`), with the
/// tasks waiting for something in it woken as soon as it shows up (``Observed``).
public final class OutputCollector: Sendable {
    /// Give `pipe.fileHandleForWriting` to the child (and close it here once the child runs).
    public let pipe = Pipe.forChild()
    private let output = Observed("")

    public init() {
        let output = self.output
        let fd = pipe.fileHandleForReading.fileDescriptor
        // Not FileHandle.readabilityHandler: on Linux it was seen to hand the same bytes over twice.
        Thread.detachNewThread {
            var buffer = [UInt8](repeating: 0, count: 65536)
            var pending: [UInt8] = []
            while true {
                let count = read(fd, &buffer, buffer.count)
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { break }
                pending += buffer[..<count]
                // Only whole UTF-8 characters go into the text; a split one waits for its other bytes.
                var end = pending.count
                var continuations = 0
                while continuations < 3, end - continuations > 0, pending[end - continuations - 1] & 0xC0 == 0x80 {
                    continuations += 1
                }
                if end - continuations > 0 {
                    let lead = pending[end - continuations - 1]
                    let length = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1
                    if length > continuations + 1 { end -= continuations + 1 }
                }
                let chunk = String(decoding: pending[..<end], as: UTF8.self)
                pending.removeFirst(end)
                output.update { $0 += chunk }
            }
            let rest = String(decoding: pending, as: UTF8.self)
            output.update { $0 += rest }
            output.finish()
        }
    }

    /// What arrived so far.
    public var text: String { output.value }

    /// Returns once `isSatisfied` holds for the text (at once if it does already). Throws ``ObservedFinished`` if
    /// the writer closes the pipe (exits) first, ``TestTimeout`` after `timeout`.
    public func wait(
        for what: String, timeout: Duration, until isSatisfied: @escaping @Sendable (String) -> Bool
    ) async throws {
        _ = try await output.wait(for: what, timeout: timeout) { isSatisfied($0) ? true : nil }
    }

    /// Returns once the writer has closed its end (or after `timeout`).
    public func waitForEnd(timeout: Duration) async { await output.waitUntilFinished(timeout: timeout) }
}

/// How a child process ended, delivered by its termination handler.
public final class ExitWatch: Sendable {
    private let status = Observed<Int32?>(nil)

    public init() {}

    /// Call from the process's termination handler (set before it runs).
    public func exited(_ process: Process) {
        let code = process.terminationReason == .exit ? process.terminationStatus : 128 + process.terminationStatus
        status.update { $0 = code }
    }

    /// The exit status (128 + signal when killed), once the process has ended.
    public func wait() async -> Int32 {
        // No time limit and nothing finishes it: only cancellation ends the wait early.
        (try? await status.wait(for: "the exit", timeout: nil) { $0 }) ?? -1
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

    /// `environment` is added to this process's own, or with `inheritingEnvironment: false` is the child's whole
    /// environment (PATH aside, which it always gets).
    public init(
        _ executable: String, _ arguments: [String], environment: [String: String] = [:], inheritingEnvironment: Bool = true
    ) throws {
        let url = executable.hasPrefix("/") ? URL(fileURLWithPath: executable) : PeerProcess.productsDirectory.appendingPathComponent(executable)
        guard FileManager.default.isExecutableFile(atPath: url.path) else {
            throw PeerProcessError("\(url.path) is not built; run `swift build --build-tests` first")
        }
        process = Process()
        process.executableURL = url
        process.arguments = arguments
        let inherited = ProcessInfo.processInfo.environment
        process.environment =
            inheritingEnvironment
            ? inherited.merging(environment) { $1 } : environment.merging(["PATH": inherited["PATH"] ?? "/usr/bin:/bin"]) { own, _ in own }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = output.pipe.fileHandleForWriting
        process.standardError = errors.pipe.fileHandleForWriting
        let exit = self.exit
        process.terminationHandler = { exit.exited($0) }
        name = ([url.lastPathComponent] + arguments).joined(separator: " ")
        try process.runWithDefaultSignalMask()
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
            let status = try await withDeadline(timeout, what: "`\(name)` to exit") { await self.exit.wait() }
            // The exit can be reported before the reader threads have taken the last output from the pipes.
            await output.waitForEnd(timeout: .seconds(5))
            await errors.waitForEnd(timeout: .seconds(5))
            return status
        } catch let timeout as TestTimeout {
            // A child that hangs says where, before it is killed: what each of its threads was waiting for.
            let stacks = StallWatch.stackSummary(of: process.processIdentifier)
            kill(process.processIdentifier, SIGKILL)
            throw PeerProcessError(
                "`\(name)` \(timeout); killed. stdout: \(stdout.suffix(2000)) stderr: \(stderr.suffix(2000))\nits threads:\(stacks)"
            )
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
        } catch is ObservedFinished {
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
        return (status, child.stdout, child.stderr)
    }
}

extension Process {
    /// `run()`, from a thread of its own whose signal mask is empty, so that the child starts with no signal
    /// blocked, as it would from a shell. The threads of Swift's concurrency pool (Dispatch workers) block almost
    /// every signal and a spawned child inherits the mask of the thread that spawned it: a Python app started
    /// from a test would then never see SIGTERM. (parleyd and parleyctl take their signals through signalfd,
    /// which works either way.)
    public func runWithDefaultSignalMask() throws {
        let outcome = Mutex<Result<Void, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        let process = self
        Thread.detachNewThread {
            var empty = sigset_t()
            sigemptyset(&empty)
            pthread_sigmask(SIG_SETMASK, &empty, nil)
            let result = Result {
                try withSpawnLock {
                    try process.run()
                    Children.spawned(process.processIdentifier)
                }
            }
            outcome.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        try outcome.withLock { $0 }?.get()
    }
}

/// Holds every spawn of this test process, one at a time. Foundation's `Process.run()` lists the open descriptors
/// and closes them in the child, but descriptors another thread opens in the meantime (a second `run()`'s
/// socket pair, which tells Foundation its child has exited) leak into the child. A long-lived child that holds
/// another child's copy keeps Foundation from ever noticing that child's exit: a parleyd that stopped at once was
/// reported still running after SIGTERM, in full test runs only.
public func withSpawnLock<T>(_ body: () throws -> T) rethrows -> T {
    try spawnLock.withLock { _ in try body() }
}

private let spawnLock = Mutex(())

/// Every child this test process spawned, killed when it exits. A test that fails half-way throws past its own
/// clean-up, and Swift Testing has no teardown to fall back on: its parleyd, listr-example or test peer used to
/// outlive the run, still listening, still dialling, and the next run started on a loaded machine.
public enum Children {
    private static let pids = Mutex<Set<Int32>>([])
    private static let killAtExit: Void = { atexit { Children.killAll() } }()

    /// Records a child just spawned (call under ``withSpawnLock(_:)``).
    public static func spawned(_ pid: Int32) {
        _ = killAtExit
        _ = pids.withLock { $0.insert(pid) }
    }

    /// SIGKILL to every recorded child that is still this process's child (a pid reused by another process is
    /// left alone).
    static func killAll() {
        let me = getpid()
        for pid in pids.withLock({ $0 }) where parent(of: pid) == me {
            kill(pid, SIGKILL)
        }
    }

    private static func parent(of pid: Int32) -> Int32? {
        // /proc/PID/stat: "pid (comm) state ppid …"; comm may hold spaces and parentheses, so parse after the last ')'.
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        return fields.count > 1 ? Int32(fields[1]) : nil
    }
}

extension Pipe {
    /// A pipe for a child's standard input or output: made under the spawn lock and close-on-exec at both ends
    /// (a child gets its end through dup2, which clears the flag), so that no other child inherits it.
    public static func forChild() -> Pipe {
        withSpawnLock {
            let pipe = Pipe()
            for handle in [pipe.fileHandleForReading, pipe.fileHandleForWriting] {
                _ = fcntl(handle.fileDescriptor, F_SETFD, FD_CLOEXEC)
            }
            return pipe
        }
    }
}
