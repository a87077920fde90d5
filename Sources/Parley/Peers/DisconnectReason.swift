import ParleyWire

/// Why a connection to a peer ended: a value to `switch` over (reconnect or not, alert or not), with a
/// sentence for logs and people as its `description`.
public enum DisconnectReason: Sendable, Hashable, CustomStringConvertible {
    /// The peer closed the TCP connection without a close frame (a crash, a killed process, a cable).
    case peerClosed
    /// On a sealed connection (a shared secret), the stream ended without the peer's sealed close frame: the peer
    /// stopped without a goodbye, or someone on the path cut the connection. Unlike ``peerClosed`` it cannot be
    /// taken for a goodbye: anyone on the path can end a TCP stream, only the peer can seal a close.
    case endedWithoutSealedClose
    /// The peer said goodbye with a close frame (shutting down, a limit of its own, a duplicate).
    case peerSaidGoodbye(ErrorCode, message: String)
    /// This side ended the connection with a close frame: the peer broke the protocol or went past a limit
    /// (idle timeout, rate limit, frame size).
    case closedByUs(ErrorCode, message: String)
    /// Nothing at all, not even a heartbeat, arrived from the peer for this long.
    case silent(Duration)
    /// The peer's send queue was full and nothing of it was taken for this long.
    case notReading(stalledFor: Duration, queueBytes: Int)
    /// Another connection to the same peer is kept; this one was retired.
    case duplicate
    /// This node is shutting down.
    case shuttingDown
    /// The handshake did not complete (refused, wrong secret, timed out).
    case handshakeFailed(HandshakeError)
    /// The socket failed (reset, I/O error), or the network under it went away.
    case transportFailed(TransportFailure)

    public var description: String {
        switch self {
        case .peerClosed: "the peer closed the connection"
        case .endedWithoutSealedClose:
            "the connection ended without the peer's sealed close frame: the peer stopped without a goodbye, or the connection was cut on the way"
        case .peerSaidGoodbye(let code, let message): "the peer closed the connection (\(code)): \(message.excerpt())"
        case .closedByUs(let code, let message): "closed by this side (\(code)): \(message.excerpt())"
        case .silent(let silence): "no data or heartbeat from the peer for \(silence.secondsText); it is presumed gone"
        case .notReading(let stalled, let bytes):
            "disconnected as too slow: nothing of its full send queue (\(bytes) bytes) was taken for \(stalled.secondsText)"
        case .duplicate: "another connection to this peer is kept"
        case .shuttingDown: "this node is shutting down"
        case .handshakeFailed(let problem): "the handshake failed: \(problem)"
        case .transportFailed(let failure): failure.description
        }
    }
}

/// Why a connection's transport failed under it: a value to `switch` over, with a sentence as its `description`.
public enum TransportFailure: Sendable, Hashable, CustomStringConvertible {
    /// A system call on the socket failed (a reset, a broken pipe): its `errno` and the system's words.
    case io(errno: Int32, message: String)
    /// This node's address that the connection ran over went away (a network change).
    case localAddressGone(host: String)
    /// The interface that the connection ran over went down or lost its carrier (a network change).
    case interfaceDown(name: String)
    /// Another failure of the connection, in SwiftNIO's words.
    case other(String)

    public var description: String {
        switch self {
        case .io(_, let message): "I/O error: \(message)"
        case .localAddressGone(let host): "this node's address \(host) went away (network change)"
        case .interfaceDown(let name): "interface \(name) went down (network change)"
        case .other(let message): message
        }
    }
}
