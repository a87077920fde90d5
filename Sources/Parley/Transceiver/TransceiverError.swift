import ParleyWire

/// The errors Parley's public API throws. Each says what was attempted and why it failed.
public enum TransceiverError: Error, Sendable, CustomStringConvertible {
    /// `start()` or `run()` has not been called, or the transceiver has been stopped.
    case notRunning
    /// The transceiver is already running; a transceiver runs once.
    case alreadyStarted
    /// The listener could not be bound.
    case bindFailed(host: String, port: Int, underlying: String)
    /// An outbound connection could not be made.
    case connectFailed(Endpoint, underlying: String)
    /// The connection was made but the handshake failed.
    case handshakeFailed(Endpoint?, HandshakeError)
    /// The peer is not (or no longer) connected.
    case peerNotConnected(PeerID)
    /// The operation needs a Parley peer, but this one is a legacy debugger app (or the other way round).
    case wrongPeerKind(PeerID, expected: Peer.Kind)
    /// The peer gate timed out.
    case noPeer(waitedFor: String, timeout: Duration)
    /// No reply came within the timeout.
    case replyTimedOut(type: String, peer: PeerID, timeout: Duration)
    /// The peer answered a request with an error.
    case remoteError(code: ErrorCode, message: String)
    /// The reply arrived but was not the expected type or did not decode.
    case unexpectedReply(expected: String, received: String, underlying: String?)
    /// The value could not be encoded.
    case encodingFailed(type: String, underlying: String)
    /// The type name is empty or longer than the protocol allows (1…1024 bytes of UTF-8).
    case invalidTypeName(String)
    /// The encoded message exceeds the configured maximum frame size.
    case messageTooLarge(type: String, size: Int, maximum: Int)
    /// The connection closed while the operation was in flight.
    case connectionClosed(PeerID, reason: String)
    /// The peer's send queue was full and nothing of it was taken for this long: the peer is not reading.
    case peerNotReading(PeerID, stalledFor: Duration)

    public var description: String {
        switch self {
        case .notRunning:
            "the transceiver is not running: call start() (or run()) first"
        case .alreadyStarted:
            "the transceiver has already been started; create a new one to start again"
        case .bindFailed(let host, let port, let underlying):
            "cannot listen on \(Endpoint(host: host, port: port)): \(underlying); choose another port (0 picks a free one)"
        case .connectFailed(let endpoint, let underlying):
            "cannot connect to \(endpoint): \(underlying)"
        case .handshakeFailed(let endpoint, let error):
            "handshake with \(endpoint.map(\.description) ?? "peer") failed: \(error)"
        case .peerNotConnected(let id):
            "peer \(id) is not connected"
        case .wrongPeerKind(let id, let expected):
            "peer \(id) is not a \(expected == .parley ? "Parley peer" : "legacy debugger app")"
        case .noPeer(let what, let timeout):
            "no \(what) connected within \(timeout.secondsText)"
        case .replyTimedOut(let type, let peer, let timeout):
            "no reply to \(type) from peer \(peer) within \(timeout.secondsText)"
        case .remoteError(let code, let message):
            "the peer answered with an error (\(code)): \(message)"
        case .unexpectedReply(let expected, let received, let underlying):
            "expected a \(expected) reply, received \(received)" + (underlying.map { ": \($0)" } ?? "")
        case .encodingFailed(let type, let underlying):
            "cannot encode \(type): \(underlying)"
        case .invalidTypeName(let name):
            "message type name \"\(name.prefix(80))\" must be 1…\(FrameLayout.maximumTypeNameLength) bytes of UTF-8"
        case .messageTooLarge(let type, let size, let maximum):
            "\(type) encodes to \(size) bytes, above the maximum frame size of \(maximum) bytes"
        case .connectionClosed(let peer, let reason):
            "the connection to peer \(peer) closed: \(reason)"
        case .peerNotReading(let peer, let stalled):
            "peer \(peer) took nothing of its full send queue for \(stalled.secondsText): it is not reading; nothing was sent"
        }
    }
}

extension Duration {
    var secondsText: String {
        let (seconds, attoseconds) = components
        let value = Double(seconds) + Double(attoseconds) / 1e18
        return value == value.rounded() ? "\(Int(value)) s" : "\(value) s"
    }

    var timeInterval: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
