import NIOCore

/// One Parley frame: a ``FrameKind`` and its fields.
public indirect enum Frame: Sendable, Hashable {
    case hello(HelloFrame)
    /// A proof of the shared secret (an HMAC), exchanged during an authenticated handshake.
    case auth(ByteBuffer)
    /// A frame protected by the connection's session keys: ciphertext of the inner frame's body, then the tag.
    case sealed(ByteBuffer)
    case message(MessageFrame)
    case errorReply(ErrorReplyFrame)
    case ping(UInt64)
    case pong(UInt64)
    case close(CloseFrame)
}

/// Identifies a message on one connection; replies name the id they answer. Zero means "none".
public struct MessageID: RawRepresentable, Sendable, Hashable, Comparable, CustomStringConvertible {
    public var rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }
    public static func < (lhs: MessageID, rhs: MessageID) -> Bool { lhs.rawValue < rhs.rawValue }
    public var description: String { String(rawValue) }
}

/// Bits of the message flags byte.
public struct MessageFlags: OptionSet, Sendable, Hashable {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// The sender waits for a reply (a message or an error reply naming this message's id).
    public static let expectsReply = MessageFlags(rawValue: 1 << 0)
}

/// Everything a router needs to dispatch or forward a message, read without touching the payload.
public struct MessageHeader: Sendable, Hashable {
    public var flags: MessageFlags
    public var id: MessageID
    public var inReplyTo: MessageID?
    public var typeName: String

    public init(typeName: String, id: MessageID, inReplyTo: MessageID? = nil, flags: MessageFlags = []) {
        self.typeName = typeName
        self.id = id
        self.inReplyTo = inReplyTo
        self.flags = flags
    }
}

/// A typed message: a header and an opaque payload (JSON for messages sent by Parley's typed API).
public struct MessageFrame: Sendable, Hashable {
    public var header: MessageHeader
    public var payload: ByteBuffer

    public init(header: MessageHeader, payload: ByteBuffer) {
        self.header = header
        self.payload = payload
    }
}

/// The opening frame of a connection: the range of protocol versions the sender speaks, then a JSON
/// ``Hello`` body. The versions come first, in binary, so that a peer can refuse an incompatible version
/// without having to understand the rest.
public struct HelloFrame: Sendable, Hashable {
    public var minimumVersion: UInt16
    public var maximumVersion: UInt16
    public var body: ByteBuffer

    public init(minimumVersion: UInt16, maximumVersion: UInt16, body: ByteBuffer) {
        self.minimumVersion = minimumVersion
        self.maximumVersion = maximumVersion
        self.body = body
    }
}

/// The reply to a request that could not be answered (unknown type, undecodable payload, failing handler).
public struct ErrorReplyFrame: Sendable, Hashable {
    public var inReplyTo: MessageID
    public var code: ErrorCode
    public var message: String

    public init(inReplyTo: MessageID, code: ErrorCode, message: String) {
        self.inReplyTo = inReplyTo
        self.code = code
        self.message = message
    }
}

/// The last frame a peer sends before closing: why the connection ends.
public struct CloseFrame: Sendable, Hashable {
    public var code: ErrorCode
    public var message: String

    public init(code: ErrorCode, message: String) {
        self.code = code
        self.message = message
    }
}

/// Reasons carried by close and error-reply frames. Unknown codes from newer peers are kept as they are.
public struct ErrorCode: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    /// Graceful close: the peer is shutting down or no longer needs the connection.
    public static let goingAway = ErrorCode(rawValue: 0)
    public static let incompatibleVersion = ErrorCode(rawValue: 1)
    public static let handshakeTimeout = ErrorCode(rawValue: 2)
    public static let malformedFrame = ErrorCode(rawValue: 3)
    public static let frameTooLarge = ErrorCode(rawValue: 4)
    public static let unknownType = ErrorCode(rawValue: 5)
    public static let undecodablePayload = ErrorCode(rawValue: 6)
    public static let noResponder = ErrorCode(rawValue: 7)
    public static let handlerFailed = ErrorCode(rawValue: 8)
    /// Both peers connected to each other at once; this connection is the one both sides drop.
    public static let duplicateConnection = ErrorCode(rawValue: 9)
    public static let connectedToSelf = ErrorCode(rawValue: 10)
    /// A proof of the shared secret did not verify, or a sealed frame failed authentication.
    public static let authenticationFailed = ErrorCode(rawValue: 11)
    public static let heartbeatTimeout = ErrorCode(rawValue: 12)
    public static let protocolViolation = ErrorCode(rawValue: 13)
    // 20–29: a limit of the receiving node was reached (docs/protocol.md §8).
    /// Refused at accept: the node holds as many connections in all, or from this address, as it allows.
    public static let tooManyConnections = ErrorCode(rawValue: 20)
    /// No message went either way for the node's idle timeout (heartbeats do not count).
    public static let idleTimeout = ErrorCode(rawValue: 21)
    /// The peer sent frames faster than the node's rate limit allows.
    public static let rateLimited = ErrorCode(rawValue: 22)
    /// The node's memory budget for frames in flight and queues was full, and this connection held the most.
    public static let memoryBudget = ErrorCode(rawValue: 23)
    /// A frame began to arrive and stopped: no byte of it for the node's frame stall timeout.
    public static let stalledFrame = ErrorCode(rawValue: 24)
    /// The hello claims the peer id of a peer connected from another address.
    public static let peerIDInUse = ErrorCode(rawValue: 15)
    /// One side requires a shared secret and the other has none (or an app that cannot authenticate connected).
    public static let authenticationRequired = ErrorCode(rawValue: 14)
    /// Over TLS between devices: the peer's certificate is not one this node is paired with (or it was unpaired).
    public static let deviceNotTrusted = ErrorCode(rawValue: 16)
    /// The node authenticates devices by their certificates over TLS, and the peer spoke in the clear.
    public static let deviceAuthenticationRequired = ErrorCode(rawValue: 17)
    /// Over TLS between devices: the receiver does not trust the sender yet and has recorded a pairing request for a
    /// person to accept; the message gives the code the receiver shows.
    public static let pairingRequested = ErrorCode(rawValue: 18)

    public var description: String {
        switch self {
        case .goingAway: "going-away"
        case .incompatibleVersion: "incompatible-version"
        case .handshakeTimeout: "handshake-timeout"
        case .malformedFrame: "malformed-frame"
        case .frameTooLarge: "frame-too-large"
        case .unknownType: "unknown-type"
        case .undecodablePayload: "undecodable-payload"
        case .noResponder: "no-responder"
        case .handlerFailed: "handler-failed"
        case .duplicateConnection: "duplicate-connection"
        case .connectedToSelf: "connected-to-self"
        case .authenticationFailed: "authentication-failed"
        case .heartbeatTimeout: "heartbeat-timeout"
        case .protocolViolation: "protocol-violation"
        case .tooManyConnections: "too-many-connections"
        case .idleTimeout: "idle-timeout"
        case .rateLimited: "rate-limited"
        case .memoryBudget: "memory-budget"
        case .stalledFrame: "stalled-frame"
        case .peerIDInUse: "peer-id-in-use"
        case .authenticationRequired: "authentication-required"
        case .deviceNotTrusted: "device-not-trusted"
        case .deviceAuthenticationRequired: "device-authentication-required"
        case .pairingRequested: "pairing-requested"
        default: "code-\(rawValue)"
        }
    }
}
