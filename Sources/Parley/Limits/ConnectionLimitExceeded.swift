import NIOCore
import ParleyWire

/// A peer went past one of this node's per-connection limits. Raised on the event loop by the limit handlers
/// and ends that connection (with a close frame telling the peer which limit).
enum ConnectionLimitExceeded: Error, Sendable, Hashable, CustomStringConvertible {
    /// No message went either way for `timeout`.
    case idle(timeout: Duration)
    /// The peer sent more frames than `limit` allows.
    case rate(MessageRateLimit)

    var closeCode: ErrorCode {
        switch self {
        case .idle: .idleTimeout
        case .rate: .rateLimited
        }
    }

    /// The limit as configured, for the log line.
    var limit: String {
        switch self {
        case .idle(let timeout): "idleTimeout=\(timeout.secondsText)"
        case .rate(let limit): "messageRateLimit=\(limit.perSecond.formatted)/s burst \(limit.burst)"
        }
    }

    var description: String {
        switch self {
        case .idle(let timeout):
            "no message in either direction for \(timeout.secondsText) (idle timeout)"
        case .rate(let limit):
            "more than \(limit.burst) frames at once or \(limit.perSecond.formatted) a second on average (rate limit)"
        }
    }
}

extension Double {
    /// `5` rather than `5.0`, but `0.25` as is.
    fileprivate var formatted: String {
        self == rounded() && abs(self) < 1e15 ? String(Int(self)) : String(self)
    }
}
