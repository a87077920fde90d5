import Synchronization

/// A value that changes as things happen (output arriving, events recorded, a door opened), and the tests waiting
/// for it to reach some state: each change wakes the waiters whose condition now holds. Waiting is an event, not a
/// poll. The building block of ``EventRecord``, ``OutputCollector`` and ``Latch``.
public final class Observed<Value: Sendable>: Sendable {
    private struct Waiter {
        var check: @Sendable (Value) -> (any Sendable)?
        var continuation: CheckedContinuation<any Sendable, any Error>
    }

    private struct State {
        var value: Value
        var finished = false
        var waiters: [UInt64: Waiter] = [:]
        var next: UInt64 = 0
    }

    private let state: Mutex<State>

    public init(_ value: Value) {
        state = Mutex(State(value: value))
    }

    public var value: Value { state.withLock { $0.value } }
    public var isFinished: Bool { state.withLock { $0.finished } }

    /// Changes the value and wakes every waiter whose condition now holds.
    public func update(_ change: @Sendable (inout Value) -> Void) {
        let woken = state.withLock { state -> [(CheckedContinuation<any Sendable, any Error>, any Sendable)] in
            change(&state.value)
            var woken: [(CheckedContinuation<any Sendable, any Error>, any Sendable)] = []
            for (token, waiter) in state.waiters {
                guard let found = waiter.check(state.value) else { continue }
                state.waiters[token] = nil
                woken.append((waiter.continuation, found))
            }
            return woken
        }
        for (continuation, found) in woken { continuation.resume(returning: found) }
    }

    /// Nothing more will change: pending waits fail with ``ObservedFinished``.
    public func finish() {
        let left = state.withLock { state in
            state.finished = true
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for waiter in left { waiter.continuation.resume(throwing: ObservedFinished()) }
    }

    /// Returns what `check` finds in the value: at once if it finds it now, else at the change that makes it.
    /// Throws ``ObservedFinished`` if the value finishes first, ``TestTimeout`` after `timeout` (nil: no bound),
    /// `CancellationError` if the waiting task is cancelled.
    public func wait<Found: Sendable>(
        for what: String, timeout: Duration? = .seconds(20), until check: @escaping @Sendable (Value) -> Found?
    ) async throws -> Found {
        let token = state.withLock { state in
            state.next += 1
            return state.next
        }
        let waiting: @Sendable () async throws -> Found = {
            let found = try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<any Sendable, any Error>) in
                    let now: Result<any Sendable, any Error>? = self.state.withLock { state in
                        if let found = check(state.value) { return .success(found) }
                        if state.finished { return .failure(ObservedFinished()) }
                        if Task.isCancelled { return .failure(CancellationError()) }
                        state.waiters[token] = Waiter(check: { check($0) }, continuation: continuation)
                        return nil
                    }
                    if let now { continuation.resume(with: now) }
                }
            } onCancel: {
                let waiter = self.state.withLock { $0.waiters.removeValue(forKey: token) }
                waiter?.continuation.resume(throwing: CancellationError())
            }
            // `check` returned a Found; the box only carries it through the continuation.
            return found as! Found
        }
        guard let timeout else { return try await waiting() }
        return try await withDeadline(timeout, what: what, waiting)
    }

    /// Returns once the value is finished (or after `timeout`).
    public func waitUntilFinished(timeout: Duration) async {
        _ = try? await wait(for: "the end", timeout: timeout) { _ -> Bool? in nil }
    }
}

/// The observed source ended (a process exited, a stream finished) before the awaited state came.
public struct ObservedFinished: Error, CustomStringConvertible {
    public init() {}
    public var description: String { "the source ended first" }
}

/// Things that happen, in order, recorded as they arrive and awaited by tests.
public final class EventRecord<Element: Sendable>: Sendable {
    private let record = Observed<[Element]>([])

    public init() {}

    /// Everything recorded so far.
    public var all: [Element] { record.value }
    public var isFinished: Bool { record.isFinished }

    public func append(_ element: Element) { record.update { $0.append(element) } }
    public func finish() { record.finish() }

    /// The first element recorded at or after position `after` that satisfies `matches`: at once if one is there,
    /// else when it is recorded.
    @discardableResult
    public func waitFor(
        _ what: String, timeout: Duration = .seconds(10), after: Int = 0, where matches: @escaping @Sendable (Element) -> Bool
    ) async throws -> Element {
        try await record.wait(for: what, timeout: timeout) { $0.dropFirst(after).first(where: matches) }
    }

    public func waitUntilFinished(timeout: Duration) async { await record.waitUntilFinished(timeout: timeout) }
}
