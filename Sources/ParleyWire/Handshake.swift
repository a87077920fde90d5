import Foundation
import NIOCore

/// Which side of a connection we are. The dialer speaks first; the acceptor answers only after it has seen
/// the dialer's first frame, so that an app speaking the legacy debugger protocol never receives a Parley frame.
public enum ConnectionRole: Sendable, Hashable {
    case dialer
    case acceptor
}

/// The handshake of one connection as a plain state machine: feed it frames, do what it returns.
public struct HandshakeStateMachine: Sendable {
    public enum Outcome: Sendable, Hashable {
        /// A Parley peer: the negotiated version and its hello.
        case parley(version: UInt16, hello: Hello)
        /// An app speaking the original debugger protocol; its first frame must still be delivered.
        case legacyDebugger(firstFrame: ByteBuffer)
    }

    public enum Action: Sendable, Hashable {
        /// Send our hello, then keep waiting.
        case sendHello
        /// Send our hello (acceptor) or nothing (dialer), and the connection is established.
        case established(Outcome, sendHello: Bool)
        /// Tell the peer why (unless it was the peer that refused), then close.
        case fail(HandshakeError, notifyPeer: Bool)
    }

    private enum State: Sendable {
        case idle
        case awaitingHello
        case done
    }

    public let role: ConnectionRole
    public let minimumVersion: UInt16
    public let maximumVersion: UInt16
    private var state: State = .idle

    public init(
        role: ConnectionRole,
        minimumVersion: UInt16 = ProtocolVersion.minimumSupported,
        maximumVersion: UInt16 = ProtocolVersion.current
    ) {
        self.role = role
        self.minimumVersion = minimumVersion
        self.maximumVersion = maximumVersion
    }

    /// Call once when the connection is up.
    public mutating func start() -> Action? {
        precondition(state == .idle, "start() called twice")
        state = .awaitingHello
        return role == .dialer ? .sendHello : nil
    }

    /// Call with every frame that arrives until the handshake is established or has failed.
    public mutating func receive(_ frame: Frame) -> Action {
        precondition(state == .awaitingHello, "frame received outside the handshake")
        state = .done
        switch frame {
        case .hello(let hello):
            let lower = max(minimumVersion, hello.minimumVersion)
            let upper = min(maximumVersion, hello.maximumVersion)
            guard lower <= upper else {
                return .fail(
                    .incompatibleVersion(
                        local: minimumVersion...maximumVersion, remote: hello.minimumVersion...max(hello.minimumVersion, hello.maximumVersion)
                    ),
                    notifyPeer: true
                )
            }
            let decoded: Hello
            do {
                decoded = try JSONDecoder().decode(Hello.self, from: Data(hello.body.readableBytesView))
            } catch {
                return .fail(.malformedHello(String(describing: error)), notifyPeer: true)
            }
            guard UUID(uuidString: decoded.peerID) != nil else {
                return .fail(.malformedHello("peerID \"\(decoded.peerID)\" is not a UUID"), notifyPeer: true)
            }
            return .established(.parley(version: upper, hello: decoded), sendHello: role == .acceptor)
        case .legacyDebugger(let json) where role == .acceptor:
            return .established(.legacyDebugger(firstFrame: json), sendHello: false)
        case .close(let close):
            return .fail(.refusedByPeer(code: close.code, message: close.message), notifyPeer: false)
        default:
            return .fail(.unexpectedFrame(Self.name(of: frame)), notifyPeer: true)
        }
    }

    public static func name(of frame: Frame) -> String {
        switch frame {
        case .hello: "hello"
        case .auth: "auth"
        case .message: "message"
        case .errorReply: "error-reply"
        case .ping: "ping"
        case .pong: "pong"
        case .close: "close"
        case .legacyDebugger: "legacy debugger frame"
        }
    }
}

/// Why a handshake did not complete.
public enum HandshakeError: Error, Sendable, Hashable, CustomStringConvertible {
    case incompatibleVersion(local: ClosedRange<UInt16>, remote: ClosedRange<UInt16>)
    case malformedHello(String)
    case unexpectedFrame(String)
    case refusedByPeer(code: ErrorCode, message: String)
    case timedOut(seconds: Double)

    public var description: String {
        switch self {
        case .incompatibleVersion(let local, let remote):
            "incompatible protocol versions: this peer speaks \(Self.text(local)), the remote peer speaks \(Self.text(remote)); upgrade the older side"
        case .malformedHello(let reason):
            "malformed hello: \(reason.excerpt())"
        case .unexpectedFrame(let name):
            "expected a hello frame first, received a \(name) frame"
        case .refusedByPeer(let code, let message):
            "the remote peer refused the connection (\(code)): \(message.excerpt())"
        case .timedOut(let seconds):
            "no hello within \(seconds) s"
        }
    }

    /// The code sent to the peer when we refuse it for this reason.
    public var closeCode: ErrorCode {
        switch self {
        case .incompatibleVersion: .incompatibleVersion
        case .malformedHello, .unexpectedFrame: .protocolViolation
        case .refusedByPeer(let code, _): code
        case .timedOut: .handshakeTimeout
        }
    }

    private static func text(_ range: ClosedRange<UInt16>) -> String {
        range.lowerBound == range.upperBound ? "version \(range.lowerBound)" : "versions \(range.lowerBound)–\(range.upperBound)"
    }
}
