import Foundation

/// A `parley-test-peer` child process: started with arguments, ready once it prints `READY port=… id=…`.
public final class PeerProcess: @unchecked Sendable {
    // @unchecked: `process` and `pipe` are set in init and only read afterwards; Process itself is
    // thread-safe for terminate/waitUntilExit/processIdentifier. No state is mutated after init.
    public let process: Process
    public let port: Int
    public let peerID: String
    private let pipe: Pipe

    /// The directory holding the built products (the test bundle and the executables sit side by side).
    public static var productsDirectory: URL {
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        var directory = executable.deletingLastPathComponent()
        // Inside an .xctest bundle on Linux the binary is the bundle itself; its parent is the products dir.
        if directory.pathExtension == "xctest" { directory = directory.deletingLastPathComponent() }
        return directory
    }

    public init(executable: String = "parley-test-peer", arguments: [String], readyTimeout: TimeInterval = 20) throws {
        let url = Self.productsDirectory.appendingPathComponent(executable)
        guard FileManager.default.isExecutableFile(atPath: url.path) else {
            throw PeerProcessError("\(url.path) is not built; run `swift build` first")
        }
        let process = Process()
        process.executableURL = url
        process.arguments = arguments
        // The child's log goes to this process's standard error: at info, a test that fails on the connection
        // shows why the child ended it.
        var environment = ProcessInfo.processInfo.environment
        if environment["PARLEY_TEST_PEER_LOG"] == nil { environment["PARLEY_TEST_PEER_LOG"] = "info" }
        process.environment = environment
        let pipe = Pipe.forChild()
        process.standardOutput = pipe
        try process.runWithDefaultSignalMask()
        self.process = process
        self.pipe = pipe

        // Read the READY line with a deadline, so a broken child fails the test instead of hanging it.
        let handle = pipe.fileHandleForReading
        let deadline = Date().addingTimeInterval(readyTimeout)
        var collected = Data()
        var ready: (Int, String)?
        while ready == nil {
            guard Date() < deadline else {
                process.terminate()
                throw PeerProcessError("\(executable) did not print READY within \(readyTimeout) s; output: \(String(decoding: collected, as: UTF8.self))")
            }
            let chunk = handle.availableData
            if chunk.isEmpty {
                process.waitUntilExit()
                throw PeerProcessError("\(executable) exited (\(process.terminationStatus)) before READY; output: \(String(decoding: collected, as: UTF8.self))")
            }
            collected.append(chunk)
            for line in String(decoding: collected, as: UTF8.self).split(separator: "\n") where line.hasPrefix("READY ") {
                var fields: [String: String] = [:]
                for pair in line.split(separator: " ").dropFirst() {
                    let parts = pair.split(separator: "=", maxSplits: 1)
                    if parts.count == 2 { fields[String(parts[0])] = String(parts[1]) }
                }
                if let port = fields["port"].flatMap(Int.init), let id = fields["id"] { ready = (port, id) }
            }
        }
        (self.port, self.peerID) = ready!
    }

    /// Starts the process from async code. Waiting for READY blocks a thread, so it happens on a thread of its
    /// own: blocking one of the few threads of Swift's cooperative pool would starve the code under test.
    public static func start(
        executable: String = "parley-test-peer", arguments: [String], readyTimeout: TimeInterval = 20
    ) async throws -> PeerProcess {
        try await offPool { try PeerProcess(executable: executable, arguments: arguments, readyTimeout: readyTimeout) }
    }

    /// SIGKILL: the peer vanishes without a goodbye.
    public func kill() async {
        Foundation.kill(process.processIdentifier, SIGKILL)
        try? await Self.offPool { self.process.waitUntilExit() }
    }

    /// Waits for the process to exit by itself and returns its status.
    public func waitForExit() async -> Int32 {
        _ = try? await Self.offPool { self.process.waitUntilExit() }
        return process.terminationStatus
    }

    /// SIGTERM, without waiting.
    public func terminate() {
        if process.isRunning { process.terminate() }
    }

    deinit { terminate() }

    /// Runs a blocking call on a dedicated thread and awaits its result.
    public static func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try body() }) }.start()
        }
    }
}

public struct PeerProcessError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
