/// What a ``RemoteDebugger`` did with the records the app wrote. Every written record ends up in exactly one of
/// `filtered`, `dropped`, `sent`, `failed`, or is still pending (``RemoteDebugger/pendingCount``).
public struct RemoteDebuggerStatistics: Sendable, Hashable {
    /// Records whose action the filter excluded: never queued, never sent.
    public var filtered = 0
    /// Records that never left: pushed out of the full queue by newer ones, written after `stop()`, or still
    /// queued when the client stopped.
    public var dropped = 0
    /// Records handed to at least one debugger connection.
    public var sent = 0
    /// Records taken from the queue that could not be sent: encoding failed, too large, or the connection was
    /// lost while sending.
    public var failed = 0
    /// States sent back by the debugger and handed to the `onRestore` handler.
    public var restored = 0
    /// States sent back that did not decode as the app's state type (or came with no handler set).
    public var restoreFailures = 0

    public init() {}
}
