import Foundation
import Synchronization
import ParleyTestSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A child process started with posix_spawn, with pipes for stdin, stdout and stderr.
///
/// Foundation's `Process` is not used: on Linux its SIGCHLD-based reaping sometimes never notices a child's exit,
/// leaving `waitUntilExit` blocked forever (seen here with the lab script). Here the test waits with `waitpid`
/// itself, and every pipe is close-on-exec so no other child (or daemon started by the lab) inherits it.
final class Subprocess: Sendable {
    struct SpawnFailed: Error, CustomStringConvertible {
        var command: [String]
        var errno: Int32
        var description: String { "cannot start \(command.joined(separator: " ")): \(String(cString: strerror(errno)))" }
    }

    let pid: pid_t
    /// The parent's ends: write to stdin, read from stdout and stderr (-1 when merged into stdout).
    let stdoutFD: Int32
    let stderrFD: Int32
    private let stdinFD: Mutex<Int32>
    private let exitStatus = Mutex<Int32?>(nil)

    /// Starts `command` (command[0] is a path). With `mergeStderr`, stderr goes to the stdout pipe.
    init(_ command: [String], environment: [String: String]? = nil, mergeStderr: Bool = false) throws {
        // Pipes made and the child spawned under the test process's spawn lock, so that no other spawn in
        // between sees these descriptors before they are close-on-exec (see withSpawnLock).
        let (pid, input, output, errors) = try withSpawnLock { () throws -> (pid_t, (read: Int32, write: Int32), (read: Int32, write: Int32), (read: Int32, write: Int32)) in
            func makePipe() throws -> (read: Int32, write: Int32) {
                var fds: [Int32] = [-1, -1]
                // (pipe2 is not imported; the window before FD_CLOEXEC only matters if another thread spawns meanwhile.)
                guard pipe(&fds) == 0 else { throw SpawnFailed(command: command, errno: errno) }
                for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
                return (fds[0], fds[1])
            }
            let input = try makePipe()
            let output = try makePipe()
            let errors = mergeStderr ? output : try makePipe()

            var actions = posix_spawn_file_actions_t()
            posix_spawn_file_actions_init(&actions)
            defer { posix_spawn_file_actions_destroy(&actions) }
            posix_spawn_file_actions_adddup2(&actions, input.read, 0)
            posix_spawn_file_actions_adddup2(&actions, output.write, 1)
            posix_spawn_file_actions_adddup2(&actions, errors.write, 2)
            // Nothing else of this process reaches the child (sockets, other children's pipes): see closeFrom.
            Self.closeFrom(3, in: &actions)

            // Children never inherit the bus address the in-process test sets for itself.
            let environment = environment ?? ProcessInfo.processInfo.environment.filter { $0.key != "DBUS_SYSTEM_BUS_ADDRESS" }
            let argv = command.map { strdup($0) } + [nil]
            let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
            defer {
                for pointer in argv { free(pointer) }
                for pointer in envp { free(pointer) }
            }
            var pid: pid_t = 0
            let result = posix_spawn(&pid, command[0], &actions, nil, argv, envp)
            if result == 0 { Children.spawned(pid) }
            close(input.read)
            close(output.write)
            if !mergeStderr { close(errors.write) }
            guard result == 0 else {
                close(input.write)
                close(output.read)
                if !mergeStderr { close(errors.read) }
                throw SpawnFailed(command: command, errno: result)
            }
            return (pid, input, output, errors)
        }
        self.pid = pid
        self.stdinFD = Mutex(input.write)
        self.stdoutFD = output.read
        self.stderrFD = mergeStderr ? -1 : errors.read
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34+; not in Swift's Glibc module, hence dlsym): the
    /// child closes every descriptor from `lowest` on. Without it a lab script, and the daemons it leaves running,
    /// inherited whatever this test process had open that was not close-on-exec, such as a parleyd's output pipe,
    /// whose end the test then never saw.
    private static func closeFrom(_ lowest: Int32, in actions: inout posix_spawn_file_actions_t) {
        typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") else { return }
        _ = unsafeBitCast(symbol, to: AddCloseFrom.self)(&actions, lowest)
    }

    deinit {
        closeStdin()
        close(stdoutFD)
        if stderrFD >= 0 { close(stderrFD) }
        // Reap it if it already ended; a still-running child is left to the lab teardown (it lives in the lab).
        _ = isRunning
    }

    /// Runs `command` to completion and returns its exit status and combined output.
    static func run(_ command: [String]) throws -> (status: Int32, output: String) {
        let process = try Subprocess(command, mergeStderr: true)
        process.closeStdin()
        let output = readAll(process.stdoutFD)
        return (process.waitForExit(), String(decoding: output, as: UTF8.self))
    }

    static func readAll(_ fd: Int32) -> [UInt8] {
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(fd, &buffer, buffer.count)
            if count > 0 { data.append(contentsOf: buffer[..<count]) }
            else if count < 0 && errno == EINTR { continue }
            else { return data }
        }
    }

    func write(_ text: String) {
        stdinFD.withLock { fd in
            guard fd >= 0 else { return }
            let bytes = Array(text.utf8)
            _ = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        }
    }

    func closeStdin() {
        stdinFD.withLock { fd in
            if fd >= 0 { close(fd) }
            fd = -1
        }
    }

    /// Whether the child still runs (reaps it if it has ended).
    var isRunning: Bool {
        exitStatus.withLock { status in
            if status != nil { return false }
            var raw: Int32 = 0
            let result = waitpid(pid, &raw, WNOHANG)
            if result == pid {
                status = Self.decode(raw)
                return false
            }
            return result == 0
        }
    }

    var terminationStatus: Int32? { _ = isRunning; return exitStatus.withLock { $0 } }

    /// Blocks until the child ends; its exit status (128 + signal if killed).
    @discardableResult
    func waitForExit() -> Int32 {
        if let status = exitStatus.withLock({ $0 }) { return status }
        var raw: Int32 = 0
        while waitpid(pid, &raw, 0) < 0 && errno == EINTR {}
        let status = Self.decode(raw)
        exitStatus.withLock { $0 = status }
        return status
    }

    func signal(_ signal: Int32) { kill(pid, signal) }

    private static func decode(_ raw: Int32) -> Int32 {
        // WIFEXITED / WEXITSTATUS / WTERMSIG, which Swift does not import as functions.
        let signal = raw & 0x7F
        return signal == 0 ? (raw >> 8) & 0xFF : 128 + signal
    }
}
