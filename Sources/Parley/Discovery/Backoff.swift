/// Delays between reconnection attempts: doubling from `initial` up to `maximum`, reset after a success.
struct Backoff: Sendable {
    let initial: Duration
    let maximum: Duration
    private(set) var next: Duration

    init(initial: Duration = .milliseconds(250), maximum: Duration = .seconds(10)) {
        self.initial = initial
        self.maximum = maximum
        self.next = initial
    }

    /// The delay to wait now; the one after it is twice as long, up to the maximum.
    mutating func delay() -> Duration {
        defer { next = min(next * 2, maximum) }
        return next
    }

    mutating func reset() { next = initial }
}
