import Foundation
import NIOCore
import NIOPosix
import ParleyWire
#if canImport(Network)
import Network
#endif

/// The errors Parley's public API throws. Each says what was attempted and why it failed.
public enum TransceiverError: Error, Sendable, CustomStringConvertible {
    /// `start()` or `run()` has not been called, or the transceiver has been stopped.
    case notRunning
    /// The transceiver is already running; a transceiver runs once.
    case alreadyStarted
    /// The listener could not be bound.
    case bindFailed(host: String, port: Int, underlying: SocketFailure)
    /// The control socket was not opened: its directory is unsafe, or another process serves it.
    case controlSocket(ControlSocketProblem)
    /// An outbound connection could not be made.
    case connectFailed(Endpoint, underlying: SocketFailure)
    /// The connection was made but the handshake failed.
    case handshakeFailed(Endpoint?, HandshakeError)
    /// The peer is not (or no longer) connected.
    case peerNotConnected(PeerID)
    /// The peer gate timed out.
    case noPeer(waitedFor: String, timeout: Duration)
    /// No reply came within the timeout.
    case replyTimedOut(type: String, peer: PeerID, timeout: Duration)
    /// The peer answered a request with an error.
    case remoteError(code: ErrorCode, message: String)
    /// The reply arrived but was not the expected type (`problem` nil) or did not decode (`problem` says why).
    case unexpectedReply(expected: String, received: String, underlying: PayloadProblem?)
    /// The value could not be encoded.
    case encodingFailed(type: String, underlying: PayloadProblem)
    /// The type name is empty or longer than the protocol allows (1…1024 bytes of UTF-8).
    case invalidTypeName(String)
    /// The encoded message exceeds the configured maximum frame size.
    case messageTooLarge(type: String, size: Int, maximum: Int)
    /// The connection closed while the operation was in flight.
    case connectionClosed(PeerID, reason: DisconnectReason)
    /// The peer's send queue was full and nothing of it was taken for this long: the peer is not reading.
    case peerNotReading(PeerID, stalledFor: Duration)
    /// ``TransceiverConfiguration/eventLoopGroup`` is a group no connection can be made on (its type's name): Parley's
    /// connections are NIO sockets, which run only on `MultiThreadedEventLoopGroup`'s loops, or on Apple platforms
    /// Network.framework connections, which run only on a `NIOTSEventLoopGroup`'s.
    case unsupportedEventLoopGroup(String)
    /// ``TransceiverConfiguration/devices``' identity cannot be used for TLS (what the TLS library said).
    case unusableDeviceIdentity(String)

    public var description: String {
        switch self {
        case .notRunning:
            "the transceiver is not running: call start() (or run()) first"
        case .alreadyStarted:
            "the transceiver has already been started; create a new one to start again"
        case .bindFailed(let host, let port, let underlying):
            "cannot listen on \(Endpoint(host: host, port: port)): \(underlying)"
                + (underlying == .addressInUse ? "; is another instance running? Choose another port (0 picks a free one)" : "")
        case .controlSocket(let problem):
            "\(problem)"
        case .connectFailed(let endpoint, let underlying):
            "cannot connect to \(endpoint): \(underlying)"
        case .handshakeFailed(let endpoint, let error):
            "handshake with \(endpoint.map(\.description) ?? "peer") failed: \(error)"
        case .peerNotConnected(let id):
            "peer \(id) is not connected"
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
        case .unsupportedEventLoopGroup(let type):
            "no connection can be made on the event loop group (\(type)): give the configuration a "
                + Self.supportedEventLoopGroups
        case .unusableDeviceIdentity(let reason):
            "the device identity cannot be used for TLS: \(reason); remove its files to make a new one"
        }
    }
}

extension TransceiverError {
    #if canImport(Network)
    static let supportedEventLoopGroups =
        "NIOTSEventLoopGroup (NIOTransportServices: Network.framework) or a MultiThreadedEventLoopGroup (NIO's sockets; "
        + "the default, MultiThreadedEventLoopGroup.singleton, is one)"
    #else
    static let supportedEventLoopGroups = "MultiThreadedEventLoopGroup (the default, MultiThreadedEventLoopGroup.singleton, is one)"
    #endif
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

/// Why a socket could not be bound or connected, sorted into what a caller can act on (SwiftNIO's and the
/// system's errors are mapped here, so that neither leaks through the API).
public enum SocketFailure: Error, Sendable, Hashable, CustomStringConvertible {
    /// Another socket is bound to the address (another instance of the program?).
    case addressInUse
    /// Not allowed: a privileged port, or a path this user may not write.
    case permissionDenied
    /// Nothing listens there.
    case refused
    /// No answer in time.
    case timedOut
    /// No route to the network or host.
    case unreachable
    /// The host name does not resolve.
    case unknownHost(String)
    /// The connection was made but closed before the handshake could start.
    case closed
    /// Another system error (`errno`).
    case system(errno: Int32)
    /// Anything else: the underlying error's type and its own text.
    case other(Unrecognized)

    /// An error none of the other cases describes, kept as its type's name and its text so that neither SwiftNIO's
    /// nor any other library's types leak through the API.
    public struct Unrecognized: Sendable, Hashable, CustomStringConvertible {
        /// The Swift type of the underlying error, e.g. `ChannelError`.
        public var errorType: String
        /// The underlying error's own text.
        public var message: String

        public init(errorType: String, message: String) {
            self.errorType = errorType
            self.message = message
        }

        public init(_ error: any Error) {
            self.init(errorType: String(describing: type(of: error)), message: String(describing: error))
        }

        public var description: String { message }
    }

    public init(_ error: any Error) {
        switch error {
        case let error as SocketFailure: self = error
        case let error as IOError: self = .init(errno: error.errnoCode)
        case let error as NIOConnectionError:
            if let first = error.connectionErrors.first {
                self = .init(first.error)
            } else if error.dnsAError != nil || error.dnsAAAAError != nil {
                self = .unknownHost(error.host)
            } else {
                self = .unreachable
            }
        case let error as ChannelError:
            switch error {
            case .connectTimeout: self = .timedOut
            case .ioOnClosedChannel, .alreadyClosed, .eof, .inputClosed, .outputClosed: self = .closed
            default: self = .other(Unrecognized(error))
            }
        case let error as SocketAddressError:
            if case .unknown(let host, _) = error { self = .unknownHost(host) } else { self = .other(Unrecognized(error)) }
        #if canImport(Network)
        // What NIOTransportServices' connections fail with: the system's error, as a socket's would be.
        case let error as NWError:
            if case .posix(let code) = error { self = .init(errno: code.rawValue) } else { self = .other(Unrecognized(error)) }
        #endif
        default: self = .other(Unrecognized(error))
        }
    }

    public init(errno code: Int32) {
        switch code {
        case EADDRINUSE: self = .addressInUse
        case EACCES, EPERM: self = .permissionDenied
        case ECONNREFUSED: self = .refused
        case ETIMEDOUT: self = .timedOut
        case ENETUNREACH, EHOSTUNREACH, EADDRNOTAVAIL: self = .unreachable
        default: self = .system(errno: code)
        }
    }

    public var description: String {
        switch self {
        case .addressInUse: "the address is already in use"
        case .permissionDenied: "permission denied"
        case .refused: "connection refused (nothing listens there)"
        case .timedOut: "timed out"
        case .unreachable: "network or host unreachable"
        case .unknownHost(let host): "unknown host \"\(host)\""
        case .closed: "the connection closed at once"
        case .system(let code): String(cString: strerror(code)) + " (errno \(code))"
        case .other(let error): error.description
        }
    }
}
