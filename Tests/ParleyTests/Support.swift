import Foundation
import Logging
import NIOCore
@testable import Parley
import ParleyTestSupport
import ParleyWire
import Synchronization
import Testing

/// A transceiver for tests: fresh identity, loopback, any free port, optional log capture.
func makeTransceiver(
    _ name: String,
    listen: String? = "127.0.0.1",
    logs: LogCapture? = nil,
    adjust: (inout TransceiverConfiguration) -> Void = { _ in }
) -> Transceiver {
    var configuration = TransceiverConfiguration(
        name: name, identity: .ephemeral, listenHost: listen, port: 0,
        logger: logs?.logger ?? Logger(label: "parley.test", factory: { _ in SwiftLogNoOpLogHandler() })
    )
    // Liveness is tested where it is the subject (those tests set their own timeout); elsewhere a CPU-starved CI
    // machine must not turn a slow event loop into a dead peer.
    configuration.heartbeatTimeout = .seconds(15)
    adjust(&configuration)
    return Transceiver(configuration: configuration)
}

/// Starts the transceivers, runs `body`, and stops them again whatever happens.
func withRunning<T>(_ transceivers: [Transceiver], _ body: () async throws -> T) async throws -> T {
    for transceiver in transceivers { try await transceiver.start() }
    do {
        let result = try await body()
        for transceiver in transceivers { await transceiver.stop() }
        return result
    } catch {
        for transceiver in transceivers { await transceiver.stop() }
        throw error
    }
}

extension Transceiver {
    var loopbackEndpoint: Endpoint { Endpoint(host: "127.0.0.1", port: listeningPort!) }

    /// Number of live connections (including duplicates not yet closed).
    var connectionCount: Int { state.withLock { $0.connections.count } }
}

/// Collects values delivered to handlers so a test can await them.
final class Inbox<Value: Sendable>: Sendable {
    let stream: AsyncStream<Value>
    let continuation: AsyncStream<Value>.Continuation

    init() { (stream, continuation) = AsyncStream.makeStream() }

    func put(_ value: Value) { continuation.yield(value) }

    /// The next `count` values, or a failure after `timeout`.
    func take(_ count: Int = 1, timeout: Duration = .seconds(10)) async throws -> [Value] {
        let stream = self.stream
        return try await withTimeout(timeout) {
            var values: [Value] = []
            for await value in stream {
                values.append(value)
                if values.count == count { break }
            }
            return values
        }
    }
}

/// Polls `condition` until it holds or `timeout` passes; returns whether it held.
func eventually(timeout: Duration = .seconds(10), _ condition: @Sendable () async -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return await condition()
}

/// A counter handlers and tasks can share.
final class Counter: Sendable {
    private let value = Mutex(0)
    func increment() { value.withLock { $0 += 1 } }
    var count: Int { value.withLock { $0 } }
}
