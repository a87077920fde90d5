/// How fast one peer may send: on average `perSecond` frames a second, with bursts of up to `burst` frames at
/// once (a token bucket). Every frame after the handshake counts, heartbeats included (one a second).
public struct MessageRateLimit: Sendable, Hashable {
    /// Frames per second allowed on average; above zero.
    public var perSecond: Double
    /// Frames allowed back to back after a quiet spell; at least 1.
    public var burst: Int

    public init(perSecond: Double, burst: Int) {
        self.perSecond = perSecond
        self.burst = burst
    }
}
