import NIOCore

/// A token bucket: it holds up to `capacity` tokens, gains `rate` tokens a second, and each frame takes one.
/// Time is passed in, so the arithmetic is tested without waiting.
struct TokenBucket: Sendable {
    let rate: Double
    let capacity: Double
    private(set) var tokens: Double
    private var last: NIODeadline

    init(_ limit: MessageRateLimit, now: NIODeadline) {
        // Guard against values that would never admit anything or overflow the arithmetic.
        rate = limit.perSecond.isFinite ? max(limit.perSecond, .leastNonzeroMagnitude) : .greatestFiniteMagnitude
        capacity = Double(max(1, limit.burst))
        tokens = capacity
        last = now
    }

    /// Takes one token if there is one; false means the sender is over its rate.
    mutating func take(now: NIODeadline) -> Bool {
        if now > last {
            let elapsed = Double((now - last).nanoseconds) / 1e9
            tokens = min(capacity, tokens + elapsed * rate)
            last = now
        }
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }
}
