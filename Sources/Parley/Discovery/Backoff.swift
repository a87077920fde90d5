/// Delays between reconnection attempts: doubling from `initial` up to `maximum`, reset after a success. The
/// transceiver's reconnects use it, and so does anything that dials on its own (`ParleyRemoteDebugger`'s
/// original-framing transport), so every reconnect follows one curve.
public struct Backoff: Sendable {
    public let initial: Duration
    public let maximum: Duration
    public private(set) var next: Duration

    public init(initial: Duration = .milliseconds(250), maximum: Duration = .seconds(10)) {
        self.initial = initial
        self.maximum = maximum
        self.next = initial
    }

    /// The delay to wait now; the one after it is twice as long, up to the maximum.
    public mutating func delay() -> Duration {
        defer { next = min(next * 2, maximum) }
        return next
    }

    public mutating func reset() { next = initial }
}
