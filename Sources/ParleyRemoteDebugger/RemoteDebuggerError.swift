import Parley

/// What a ``RemoteDebugger`` refuses, or why a record did not reach the debugger. Lifecycle errors are thrown by
/// `start()` and `run()`; send failures are logged and counted (``RemoteDebuggerStatistics/failed``), never thrown
/// at the app, because `write` must not fail or wait.
public enum RemoteDebuggerError: Error, Sendable, Hashable, CustomStringConvertible {
    /// `start()` or `run()` was called on a debugger client that has already run.
    case alreadyStarted
    /// The queue capacity is below 1.
    case invalidQueueCapacity(Int)
    /// The configured service type is not a valid DNS-SD type.
    case invalidServiceType(String, reason: String)
    /// The encoded record is larger than the configured maximum; it was not sent.
    case recordTooLarge(size: Int, maximum: Int)
    /// The state (or the record around it) could not be encoded as JSON.
    case encodingFailed(PayloadProblem)
    /// No debugger was connected when the record was to be sent.
    case noDebuggerConnected
    /// Every debugger the record was sent to failed: each one's name (or address) and why.
    case notDelivered([DeliveryFailure])
    /// A trust other than `.anyOpen` needs the app's device identity, which cannot be read or made.
    case deviceIdentity(DeviceIdentityError)
    /// A trust other than `.anyOpen` with the original framing, which has no TLS and no device identity: the app
    /// would send to any debugger while its configuration says otherwise.
    case trustNeedsParleyProtocol(DebuggerTrust)

    public var description: String {
        switch self {
        case .alreadyStarted:
            "this remote debugger client has already been started; a client runs once, create a new one to start again"
        case .invalidQueueCapacity(let capacity):
            "queue capacity \(capacity) is invalid: it must be at least 1"
        case .invalidServiceType(let type, let reason):
            "cannot discover the debugger on '\(type)': \(reason)"
        case .recordTooLarge(let size, let maximum):
            "the record is \(size) bytes, more than the \(maximum) the debugger accepts; send a smaller state or screenshot"
        case .encodingFailed(let reason):
            "the state could not be encoded as JSON: \(reason)"
        case .noDebuggerConnected:
            "the record did not reach the debugger: no debugger is connected"
        case .notDelivered(let failures):
            "the record did not reach the debugger: " + failures.map(\.description).joined(separator: "; ")
        case .deviceIdentity(let error):
            "cannot send to paired debuggers: \(error)"
        case .trustNeedsParleyProtocol(let trust):
            "sending only to \(trust) needs Parley's protocol: the original framing cannot tell one debugger from another; use wireProtocol .parley, or trust .anyOpen"
        }
    }
}

/// One debugger a record could not be sent to.
public struct DeliveryFailure: Sendable, Hashable, CustomStringConvertible {
    /// The debugger's name, or its address.
    public var debugger: String
    /// Why, as the transport reported it.
    public var reason: String

    public var description: String { "\(debugger): \(reason)" }
}
