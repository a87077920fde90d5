/// Thrown inside ``withTimeout(_:operation:)`` when the deadline passes first; callers map it to an error that
/// names what was being waited for.
struct TimeoutExpired: Error {}

/// Runs `operation`, cancelling it and throwing ``TimeoutExpired`` if it has not finished within `timeout`.
func withTimeout<T: Sendable>(
    _ timeout: Duration,
    operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await operation() }
        group.addTask {
            try await Task.sleep(for: timeout)
            throw TimeoutExpired()
        }
        defer { group.cancelAll() }
        return try await group.next()!
    }
}
