/// Delays between reconnection attempts: doubling from `initial` up to `maximum`, reset after a success, each
/// delay drawn at random between half of it and all of it ("equal jitter"), so that peers that lost the same
/// network at the same moment do not all redial in step. The transceiver's reconnects use it, and so does anything
/// that dials on its own (`ParleyRemoteDebugger`'s original-framing transport), so every reconnect follows one curve.
public struct Backoff: Sendable {
    public let initial: Duration
    public let maximum: Duration
    /// How long a connection must have lasted to count as a success (see ``afterConnection(lasted:)``).
    public let stableAfter: Duration
    /// The nominal delay of the next attempt (before jitter).
    public private(set) var next: Duration
    private let jitter: @Sendable () -> Double
    /// Whether the last thing that happened was a connection ending short (see ``afterConnection(lasted:)``).
    private var lastEndedShort = false

    /// `jitter` returns a number in 0…1 (the share of the random half to add); tests pass a constant.
    public init(
        initial: Duration = .milliseconds(250),
        maximum: Duration = .seconds(10),
        stableAfter: Duration = .seconds(2),
        jitter: @escaping @Sendable () -> Double = { Double.random(in: 0...1) }
    ) {
        self.initial = initial
        self.maximum = maximum
        self.stableAfter = stableAfter
        self.next = initial
        self.jitter = jitter
    }

    /// The delay to wait now, between half the nominal delay and all of it; the nominal delay then doubles, up to
    /// the maximum.
    public mutating func delay() -> Duration {
        lastEndedShort = false
        defer { next = min(next * 2, maximum) }
        let share = min(max(jitter(), 0), 1)
        return next / 2 + (next / 2) * share
    }

    public mutating func reset() {
        next = initial
        lastEndedShort = false
    }

    /// What to do once a connection that was established has ended after `lasted`: nil (redial at once, the delays
    /// start over) when it lasted at least ``stableAfter``; otherwise the delay to wait first. A connection the
    /// other side ends right after the handshake (it refused this node's peer id, or is shutting down) is a failed
    /// attempt, not a success: redialling it at once would spin.
    ///
    /// The delays of failed dials before that connection are over (its handshake worked): a first short
    /// connection waits the initial delay, and only short connections in a row grow it.
    public mutating func afterConnection(lasted: Duration) -> Duration? {
        guard lasted < stableAfter else {
            reset()
            return nil
        }
        if !lastEndedShort { reset() }
        let wait = delay()
        lastEndedShort = true
        return wait
    }
}
