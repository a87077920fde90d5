import Foundation
import ParleyTestSupport
import Testing

/// A `parleyd` child process for one test: its own directory, a chosen environment (nothing inherited but PATH),
/// stderr captured to a file that the test polls with `Task.sleep` (no blocking read on the cooperative pool).
final class DaemonProcess: @unchecked Sendable {
    // @unchecked: every stored property is a `let` set in init; `Process` is safe to query (`isRunning`,
    // `terminationStatus`, `processIdentifier`) from any thread, and the log file is only read.
    let process: Process
    let logFile: URL

    init(arguments: [String], environment: [String: String], directory: URL) throws {
        let executable = PeerProcess.productsDirectory.appendingPathComponent("parleyd")
        guard FileManager.default.isExecutableFile(atPath: executable.path) else {
            throw PeerProcessError("\(executable.path) is not built; run `swift build` first")
        }
        logFile = directory.appendingPathComponent("parleyd-\(UUID().uuidString.prefix(8)).log")
        _ = FileManager.default.createFile(atPath: logFile.path, contents: nil)
        let output = try FileHandle(forWritingTo: logFile)
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        var environment = environment
        environment["PATH"] = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        environment["HOME"] = environment["HOME"] ?? directory.path
        process.environment = environment
        process.standardError = output
        process.standardOutput = output
        process.standardInput = FileHandle.nullDevice
        try process.run()
        try output.close()
        self.process = process
    }

    var log: String { (try? String(contentsOf: logFile, encoding: .utf8)) ?? "" }

    /// Polls the log until a line contains `text`; fails if the process exits or the deadline passes first.
    @discardableResult
    func waitForLine(containing text: String, timeout: Duration = .seconds(20)) async throws -> String {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let line = log.split(separator: "\n").first(where: { $0.contains(text) }) { return String(line) }
            if !process.isRunning {
                // One more look: the line may have been written just before exiting.
                if let line = log.split(separator: "\n").first(where: { $0.contains(text) }) { return String(line) }
                throw PeerProcessError("parleyd exited (\(process.terminationStatus)) before logging \"\(text)\"; log:\n\(log)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw PeerProcessError("parleyd did not log \"\(text)\" within \(timeout); log:\n\(log)")
    }

    /// The port from the "parleyd ready" line.
    func waitUntilReady() async throws -> Int {
        let line = try await waitForLine(containing: "parleyd ready")
        return try #require(Self.field("port", in: line).flatMap(Int.init), "no port in: \(line)")
    }

    /// Waits for the process to exit; returns its status, or nil if it is still running at the deadline.
    func waitForExit(timeout: Duration) async -> Int32? {
        let deadline = ContinuousClock.now + timeout
        while process.isRunning {
            if ContinuousClock.now >= deadline { return nil }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return process.terminationStatus
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

/// A fake systemd: a Unix datagram socket bound at `path` (or an abstract name with `@`), read without blocking.
final class FakeNotifySocket: @unchecked Sendable {
    // @unchecked: `fd` and `address` are lets; reads go through `recv(2)` on a non-blocking socket, and
    // `messages` is only called from the one test task that owns this object.
    let fd: Int32
    let address: String

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
        let result = withUnsafePointer(to: &sockaddr) { pointer in
            pointer.withMemoryRebound(to: Glibc.sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(length)) }
        }
        guard result == 0 else {
            close(fd)
            throw PeerProcessError("bind \(address): \(String(cString: strerror(errno)))")
        }
    }

    /// Datagrams received so far (each may hold several `KEY=value` lines).
    private var received: [String] = []

    private func drain() {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = recv(fd, &buffer, buffer.count, 0)
            guard count > 0 else { return }
            received.append(String(decoding: buffer[0..<count], as: UTF8.self))
        }
    }

    /// Every `KEY=value` line received so far, in order.
    var lines: [String] {
        drain()
        return received.flatMap { $0.split(separator: "\n").map(String.init) }
    }

    /// Polls until a line satisfies `predicate`.
    func waitFor(_ description: String, timeout: Duration = .seconds(10), _ predicate: (String) -> Bool) async throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if lines.contains(where: predicate) { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw PeerProcessError("no \(description) on NOTIFY_SOCKET within \(timeout); got \(lines)")
    }

    deinit {
        close(fd)
        if !address.hasPrefix("@") { unlink(address) }
    }
}
