/// Waits between reconnection attempts: doubling from `initial` up to `maximum`, back to `initial` after a
/// connection succeeds. The same curve as the transceiver's own reconnects (0.25 s to 10 s), so both protocols
/// find a restarted debugger equally soon.
struct ReconnectBackoff: Sendable {
    let initial: Duration
    let maximum: Duration
    private var next: Duration

    init(initial: Duration = .milliseconds(250), maximum: Duration = .seconds(10)) {
        self.initial = initial
        self.maximum = maximum
        self.next = initial
    }

    mutating func delay() -> Duration {
        defer { next = min(next * 2, maximum) }
        return next
    }

    mutating func reset() { next = initial }
}
