import NIOCore

/// The connection side of a ``RemoteDebugger``: finds the debugger, stays connected, carries encoded records out
/// and states back in. One implementation per wire protocol; neither knows the app's state or action types.
protocol DebuggerTransport: Sendable {
    /// Connects and reconnects until ``shutdown()`` or cancellation, then returns once everything is closed.
    /// Throws only if it cannot start at all.
    func run() async throws
    /// Ends ``run()``. Sends still in flight fail. Idempotent; may come before `run()`.
    func shutdown()
    /// Whether a record sent now has a debugger to go to.
    var hasDebugger: Bool { get }
    /// Sends one encoded record (the payload of a `parley.debugger.record` message, or the JSON body of a 206
    /// frame) to every connected debugger. Throws if it reached none.
    func send(_ record: ByteBuffer) async throws
    /// The app queued a record: a transport that connects on demand may dial now. Called from `write`, so O(1).
    func recordQueued()
}

/// What a transport tells its ``RemoteDebugger``. Both closures are called from the transport's tasks.
struct TransportEvents: Sendable {
    /// A debugger connected or disconnected: queued records may now be sendable.
    var connectivityChanged: @Sendable () -> Void
    /// The debugger sent a state back: its JSON text, and a description of the sender for logs.
    var stateReceived: @Sendable (ByteBuffer, String) async -> Void
    /// Whether records are waiting to be sent.
    var hasPendingRecords: @Sendable () -> Bool
}
