import Parley
import Synchronization

/// Values delivered from handlers (or any other task), awaited by a test.
public final class Inbox<Value: Sendable>: Sendable {
    private let stream: AsyncStream<Value>
    private let continuation: AsyncStream<Value>.Continuation

    public init() { (stream, continuation) = AsyncStream.makeStream() }

    public func put(_ value: Value) { continuation.yield(value) }

    /// The next `count` values, or ``TestTimeout`` after `timeout`.
    public func take(_ count: Int = 1, timeout: Duration = .seconds(30)) async throws -> [Value] {
        let stream = stream
        return try await withDeadline(timeout, what: "\(count) value(s)") {
            var values: [Value] = []
            for await value in stream {
                values.append(value)
                if values.count == count { break }
            }
            return values
        }
    }

    public func next(timeout: Duration = .seconds(30)) async throws -> Value {
        // Empty when the waiting task was cancelled: an error, not a crash of the whole test process.
        guard let value = try await take(1, timeout: timeout).first else { throw CancellationError() }
        return value
    }
}

public struct TestTimeout: Error, CustomStringConvertible {
    public var what: String
    public var timeout: Duration
    public var description: String { "timed out after \(timeout) waiting for \(what)" }
}

/// Runs `operation`, or throws ``TestTimeout`` once `timeout` has passed.
public func withDeadline<T: Sendable>(
    _ timeout: Duration, what: String, _ operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    StallWatch.startIfRequested()
    return try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await operation() }
        group.addTask {
            try? await Task.sleep(for: timeout)
            return nil
        }
        defer { group.cancelAll() }
        guard let result = try await group.next()! else { throw TestTimeout(what: what, timeout: timeout) }
        return result
    }
}

/// Whether `condition` holds of `transceiver`'s connected peers within `timeout`: checked now and again at each peer
/// event (the registry announces a connect or a departure after changing its table), never polled.
public func eventually(
    peersOf transceiver: Transceiver, timeout: Duration = .seconds(30), _ condition: @escaping @Sendable ([Peer]) -> Bool
) async -> Bool {
    // Subscribed before the first look, so no change can fall between the look and the wait.
    let events = transceiver.peerEvents
    if condition(transceiver.peers) { return true }
    let held = try? await withDeadline(timeout, what: "the peers to match") {
        for await _ in events where condition(transceiver.peers) { return true }
        return condition(transceiver.peers)
    }
    return held ?? condition(transceiver.peers)
}

/// Polls `condition` until it holds or `timeout` passes; returns whether it held. For state that announces no
/// change (counters, queue depths, another process's output); prefer an event where there is one.
public func eventually(timeout: Duration = .seconds(30), _ condition: @Sendable () async -> Bool) async -> Bool {
    StallWatch.startIfRequested()
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return await condition()
}

/// Starts `transceivers`, runs `body`, and stops them again whatever happens (concurrently: each stop may wait for
/// its flush timeout).
public func withRunning<T>(_ transceivers: [Transceiver], _ body: () async throws -> T) async throws -> T {
    func stopAll() async {
        await withTaskGroup(of: Void.self) { group in
            for transceiver in transceivers { group.addTask { await transceiver.stop() } }
        }
    }
    do {
        for transceiver in transceivers { try await transceiver.start() }
        let result = try await body()
        await stopAll()
        return result
    } catch {
        await stopAll()
        throw error
    }
}

/// The first number after `prefix` in `text` (e.g. the port in listr-example's `listr ready on port 7206` line).
public func number(after prefix: String, in text: String) -> Int? {
    guard let range = text.range(of: prefix) else { return nil }
    return Int(text[range.upperBound...].prefix { $0.isNumber })
}

/// A one-way door for tests: tasks wait at it until someone opens it (a handler held until the test says so, or a
/// test waiting until a handler has started). Waiting is an event, not a poll, and has no time limit of its own; a
/// waiting task that is cancelled throws `CancellationError`.
public final class Latch: Sendable {
    private let opened = Observed(false)

    public init() {}

    public var isOpen: Bool { opened.value }

    public func open() { opened.update { $0 = true } }

    public func wait() async throws {
        _ = try await opened.wait(for: "the latch to open", timeout: nil) { $0 ? true : nil }
    }
}
