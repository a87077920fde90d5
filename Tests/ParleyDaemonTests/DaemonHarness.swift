import Foundation
import ParleyTestSupport
import Synchronization
import Testing

/// A `parleyd` child process for one test: its own directory, a chosen environment (nothing inherited but PATH),
/// its standard output and error collected as they arrive; waiting for a log line or for the exit is waiting for
/// an event.
final class DaemonProcess: @unchecked Sendable {
    // @unchecked: every stored property is a `let` set in init; `Process` is safe to query (`isRunning`,
    // `processIdentifier`) from any thread, and the collector and exit watch are Sendable.
    let process: Process
    private let output = OutputCollector()
    private let exit = ExitWatch()

    init(arguments: [String], environment: [String: String], directory: URL) throws {
        let executable = PeerProcess.productsDirectory.appendingPathComponent("parleyd")
        guard FileManager.default.isExecutableFile(atPath: executable.path) else {
            throw PeerProcessError("\(executable.path) is not built; run `swift build` first")
        }
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        var environment = environment
        environment["PATH"] = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        environment["HOME"] = environment["HOME"] ?? directory.path
        // The web debugger on a free port (tests run side by side), unless the test chooses.
        environment["PARLEY_WEB_LISTEN"] = environment["PARLEY_WEB_LISTEN"] ?? "127.0.0.1:0"
        process.environment = environment
        process.standardError = output.pipe.fileHandleForWriting
        process.standardOutput = output.pipe.fileHandleForWriting
        process.standardInput = FileHandle.nullDevice
        let exit = self.exit
        process.terminationHandler = { exit.exited($0) }
        try process.runWithDefaultSignalMask()
        try output.pipe.fileHandleForWriting.close()
        self.process = process
    }

    var log: String { output.text }

    /// Waits until a line contains `text`; fails if the process exits or the deadline passes first.
    @discardableResult
    func waitForLine(containing text: String, timeout: Duration = .seconds(20)) async throws -> String {
        @Sendable func line(in log: String) -> String? { log.split(separator: "\n").first { $0.contains(text) }.map(String.init) }
        do {
            try await output.wait(for: "parleyd to log \"\(text)\"", timeout: timeout) { line(in: $0) != nil }
        } catch is ObservedFinished {
            throw PeerProcessError("parleyd exited (\(await exit.wait())) before logging \"\(text)\"; log:\n\(log)")
        } catch is TestTimeout {
            throw PeerProcessError("parleyd did not log \"\(text)\" within \(timeout); log:\n\(log)")
        }
        return line(in: log) ?? ""
    }

    /// The port from the "parleyd ready" line.
    func waitUntilReady() async throws -> Int {
        let line = try await waitForLine(containing: "parleyd ready")
        return try #require(Self.field("port", in: line).flatMap(Int.init), "no port in: \(line)")
    }

    /// Waits for the process to exit; returns its status, or nil if it is still running at the deadline.
    func waitForExit(timeout: Duration) async -> Int32? {
        let status = try? await withDeadline(timeout, what: "parleyd to exit") { await self.exit.wait() }
        // The exit can be reported before the reader thread has taken the last lines from the pipe.
        if status != nil {
            await output.waitForEnd(timeout: .seconds(5))
        } else {
            await printStacks()
        }
        return status
    }

    /// Every thread's stack of a parleyd that did not exit when it should have (gdb, when installed): what it
    /// waits for is the only clue a rare hang leaves.
    private func printStacks() async {
        let pid = process.processIdentifier
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/gdb") else { return }
        let stacks = try? await ChildProcess.run(
            "/usr/bin/gdb", ["-p", String(pid), "-batch", "-ex", "thread apply all bt 30"], timeout: .seconds(60))
        print("parleyd (pid \(pid)) did not exit; its threads:\n\(stacks?.stdout ?? "(gdb failed)")\nlog:\n\(log)")
    }

    func signal(_ signal: Int32) { Foundation.kill(process.processIdentifier, signal) }

    /// SIGKILL if still running (cleanup; every test ends with this).
    func kill() {
        if process.isRunning { Foundation.kill(process.processIdentifier, SIGKILL) }
    }

    deinit { kill() }

    static func field(_ key: String, in line: String) -> String? {
        for pair in line.split(separator: " ") where pair.hasPrefix("\(key)=") {
            return String(pair.dropFirst(key.count + 1))
        }
        return nil
    }
}

/// A scratch directory for one test, removed at the end.
struct Scratch: ~Copyable {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("parleyd-test-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    func write(_ name: String, _ text: String) throws -> String {
        let file = url.appendingPathComponent(name)
        try Data(text.utf8).write(to: file)
        return file.path
    }

    /// An environment for parleyd that reads this directory's config file, keeps its state here and never
    /// touches /etc/parley or the user's directories.
    func environment(config: String, _ extra: [String: String] = [:]) -> [String: String] {
        var environment = [
            "PARLEY_CONFIG": config, "HOME": url.path, "XDG_RUNTIME_DIR": url.path,
            // Never the default /run/parley/parleyd.sock (the tests may run as root, and in parallel).
            "PARLEY_CONTROL_SOCKET": url.appendingPathComponent("parleyd.sock").path,
        ]
        environment.merge(extra) { _, new in new }
        return environment
    }

    deinit { try? FileManager.default.removeItem(at: url) }
}

/// A fake systemd: a Unix datagram socket bound at `path` (or an abstract name with `@`). A dispatch source reads
/// each datagram as it arrives and wakes the tasks waiting for one: nothing polls.
final class FakeNotifySocket: @unchecked Sendable {
    // @unchecked: `fd`, `address` and `source` are lets; datagrams are read only on the source's queue, and
    // what they feed goes into `received`, which has its own lock.
    let fd: Int32
    let address: String
    private let source: any DispatchSourceRead

    private struct Received: Sendable {
        var lines: [String] = []
        /// When each line arrived.
        var arrivals: [ContinuousClock.Instant] = []
    }

    private let received = Observed(Received())

    init(address: String) throws {
        self.address = address
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw PeerProcessError("socket failed") }
        var sockaddr = sockaddr_un()
        sockaddr.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(address.utf8)
        let abstract = bytes.first == UInt8(ascii: "@")
        if abstract { bytes[0] = 0 }
        withUnsafeMutableBytes(of: &sockaddr.sun_path) { $0.copyBytes(from: bytes) }
        let length = MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + bytes.count + (abstract ? 0 : 1)
        let fd = self.fd
        let result = withUnsafePointer(to: &sockaddr) { pointer in
            pointer.withMemoryRebound(to: Glibc.sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(length)) }
        }
        guard result == 0 else {
            close(fd)
            throw PeerProcessError("bind \(address): \(String(cString: strerror(errno)))")
        }
        source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: DispatchQueue(label: "fake-notify-socket"))
        source.setEventHandler { [weak self] in self?.drain() }
        source.resume()
    }

    /// Reads every datagram waiting (each may hold several `KEY=value` lines) and wakes whoever they satisfy.
    private func drain() {
        var buffer = [UInt8](repeating: 0, count: 4096)
        var lines: [String] = []
        while true {
            let count = recv(fd, &buffer, buffer.count, 0)
            guard count > 0 else { break }
            lines += String(decoding: buffer[0..<count], as: UTF8.self).split(separator: "\n").map(String.init)
        }
        let now = ContinuousClock.now
        let arrived = lines
        received.update { state in
            state.lines += arrived
            state.arrivals += arrived.map { _ in now }
        }
    }

    /// Every `KEY=value` line received so far, in order.
    var lines: [String] { received.value.lines }

    /// When each line equal to `line` arrived.
    func arrivals(of line: String) -> [ContinuousClock.Instant] {
        let state = received.value
        return zip(state.lines, state.arrivals).filter { $0.0 == line }.map(\.1)
    }

    /// Waits until a received line satisfies `predicate`.
    func waitFor(_ description: String, timeout: Duration = .seconds(10), _ predicate: @escaping @Sendable (String) -> Bool) async throws {
        try await waitForLines(description, timeout: timeout) { $0.contains(where: predicate) }
    }

    /// Waits until the lines received so far satisfy `predicate`.
    func waitForLines(_ description: String, timeout: Duration = .seconds(10), _ predicate: @escaping @Sendable ([String]) -> Bool) async throws {
        do {
            _ = try await received.wait(for: description, timeout: timeout) { predicate($0.lines) ? true : nil }
        } catch is TestTimeout {
            throw PeerProcessError("no \(description) on NOTIFY_SOCKET within \(timeout); got \(lines)")
        }
    }

    deinit {
        source.cancel()
        close(fd)
        if !address.hasPrefix("@") { unlink(address) }
    }
}
