import NIOCore
import ParleyWire

/// A peer went past one of this node's per-connection limits. Raised on the event loop by the limit handlers
/// and ends that connection (with a close frame telling the peer which limit).
enum ConnectionLimitExceeded: Error, Sendable, Hashable, CustomStringConvertible {
    /// No message went either way for `timeout`.
    case idle(timeout: Duration)
    /// The peer sent more frames than `limit` allows.
    case rate(MessageRateLimit)
    /// The node's memory budget was full, and this connection held the most of it (`held` bytes).
    case memoryBudget(held: Int, capacity: Int)
    /// A frame began to arrive and no further byte of it came for `timeout`.
    case stalledFrame(timeout: Duration)

    var closeCode: ErrorCode {
        switch self {
        case .idle: .idleTimeout
        case .rate: .rateLimited
        case .memoryBudget: .memoryBudget
        case .stalledFrame: .stalledFrame
        }
    }

    /// The limit as configured, for the log line.
    var limit: String {
        switch self {
        case .idle(let timeout): "idleTimeout=\(timeout.secondsText)"
        case .rate(let limit): "messageRateLimit=\(limit.perSecond.formatted)/s burst \(limit.burst)"
        case .memoryBudget(_, let capacity): "memoryBudget=\(capacity)"
        case .stalledFrame(let timeout): "frameStallTimeout=\(timeout.secondsText)"
        }
    }

    var description: String {
        switch self {
        case .idle(let timeout):
            "no message in either direction for \(timeout.secondsText) (idle timeout)"
        case .rate(let limit):
            "more than \(limit.burst) frames at once or \(limit.perSecond.formatted) a second on average (rate limit)"
        case .memoryBudget(let held, let capacity):
            "the node's memory budget (\(capacity) bytes for frames in flight and queues) is full, and this connection held the most (\(held) bytes)"
        case .stalledFrame(let timeout):
            "a frame began to arrive and no byte of it came for \(timeout.secondsText) (frame stall timeout)"
        }
    }
}

extension Double {
    /// `5` rather than `5.0`, but `0.25` as is.
    fileprivate var formatted: String {
        self == rounded() && abs(self) < 1e15 ? String(Int(self)) : String(self)
    }
}
