import Foundation
import Logging
import NIOCore
import NIOPosix
import ParleyWire

/// How a ``Transceiver`` identifies itself, where it listens and which limits it enforces.
/// Every field has a default that suits a LAN; `.init(name:)` is usually all an app needs.
public struct TransceiverConfiguration: Sendable {
    /// Display name sent in the handshake and, with discovery, advertised as the service instance name.
    public var name: String
    /// Where the stable peer id comes from.
    public var identity: Identity
    /// Address to listen on. `"::"` accepts IPv6 and IPv4; `nil` means do not listen (outbound only).
    public var listenHost: String?
    /// TCP port; 0 lets the system pick a free one (read it back from ``Transceiver/listeningPort``).
    public var port: Int
    /// Largest frame body accepted or sent, in bytes.
    public var maximumFrameSize: Int
    /// A connection whose hello does not arrive in this time is closed.
    public var handshakeTimeout: Duration
    /// A ping is sent after this much time without writing.
    public var heartbeatInterval: Duration
    /// A connection that has received nothing (not even a pong) for this long is considered dead.
    public var heartbeatTimeout: Duration
    /// Bytes queued towards one peer above which `send` waits (backpressure).
    public var outboundHighWatermark: Int
    /// Bytes queued towards one peer below which waiting senders resume.
    public var outboundLowWatermark: Int
    /// How long `broadcast` waits for a full queue before it disconnects that peer as too slow.
    public var slowPeerTimeout: Duration
    /// Connections one listener holds at once (the TCP listener and the control socket count separately, so a
    /// flood from the LAN cannot lock local tools out); a connection beyond it is refused with
    /// `too-many-connections`. Connections this node dials are not counted. `nil`: no limit.
    public var maximumConnections: Int?
    /// Connections held at once from one remote IP address; control-socket clients are not counted. `nil`: no limit.
    public var maximumConnectionsPerAddress: Int?
    /// A connection over which no message went either way for this long (heartbeats do not count) is closed with
    /// `idle-timeout`. Control-socket clients are exempt. `nil`: never.
    public var idleTimeout: Duration?
    /// Accepted TCP connections that have not completed their handshake, held at once: a pool of their own, so that
    /// connections that never say who they are cannot take the slots of peers that did. When it is full, the
    /// oldest one that has not sent a byte for a second since it was accepted is closed to make room; if there is
    /// none, the newcomer is refused with `too-many-connections`. From half full on, a new connection's handshake
    /// clock starts at accept rather than at its first byte. `nil`: no separate pool.
    public var maximumPendingConnections: Int? = 256
    /// Connections from one IP address in that pool at once; `nil`: ``maximumConnectionsPerAddress``.
    public var maximumPendingConnectionsPerAddress: Int? = nil
    /// Bytes this node holds at most for all its connections together: frames still arriving (charged as their
    /// bytes arrive) and messages queued towards peers. Over it, the connections holding the most are closed with
    /// `memory-budget`. `nil`: no budget (each connection is still bounded by the frame size and its queue).
    public var memoryBudget: Int? = 256 * 1024 * 1024
    /// A frame that has begun to arrive and gets no further byte for this long closes its connection with
    /// `stalled-frame`. `nil`: never.
    public var frameStallTimeout: Duration? = .seconds(10)
    /// How fast a peer may send frames; a peer that sends faster is disconnected with `rate-limited`.
    /// Control-socket clients are exempt. `nil`: no limit.
    public var messageRateLimit: MessageRateLimit?
    /// Whether a connection's handlers run on its event-loop thread (lowest latency; a handler that computes
    /// for long delays other connections on that loop) or on Swift's global executor.
    public var handlersRunOnEventLoop: Bool
    /// On shutdown, how long queued messages get to reach their peers.
    public var shutdownFlushTimeout: Duration
    /// A Unix domain socket to accept local clients on (same protocol as TCP; mode 0660). `nil`: none.
    public var controlSocketPath: String?
    /// Avahi discovery: advertise, browse and auto-connect. `nil` turns discovery off.
    public var discovery: DiscoveryConfiguration?
    /// The interfaces the TCP listener accepts connections on (loopback always): a connection that arrives on
    /// another is closed at once, unanswered. nil: every interface. parleyd uses the same filter as discovery.
    public var listenInterfaces: InterfaceFilter? = nil
    /// Peers to keep connected whatever discovery does (`host:port`): the fallback where multicast is blocked.
    public var staticPeers: [Endpoint]
    /// Capabilities announced in the handshake.
    public var capabilities: [String]
    /// The secret TCP peers must prove they know; their connections are then encrypted. `nil`: open mode, anyone
    /// who reaches the port may connect. Never asked of control-socket clients (the socket's mode protects it).
    public var sharedSecret: SharedSecret?
    /// Devices authenticate each other by their certificates over TLS 1.3 (docs/security.md): this node's identity
    /// and the devices it trusts. Takes the place of ``sharedSecret`` when both are set. `nil`: not used.
    public var devices: DeviceAuthentication?
    /// Whether apps in the original Swift Talk debugger framing (first byte 0xCE) are accepted on the TCP listener,
    /// and how their frames become messages. `nil` (the default): such connections are closed with a log line.
    public var originalFraming: OriginalFramingSupport?
    public var logger: Logger
    /// The event loops that run this node's connections (and, with ``handlersRunOnEventLoop``, its handlers). Shared
    /// by default: `MultiThreadedEventLoopGroup.singleton`, NIO's sockets, one thread per core. A group of its own
    /// keeps one node's work from holding up others in the same process; its owner shuts it down after
    /// ``Transceiver/stop()``. On Apple platforms a `NIOTSEventLoopGroup` (NIOTransportServices) makes the
    /// connections with Network.framework instead (docs/apple.md); any other kind of group is refused at start
    /// (``TransceiverError/unsupportedEventLoopGroup(_:)``).
    public var eventLoopGroup: any EventLoopGroup

    public enum Identity: Sendable, Hashable {
        /// Read the peer id from this file, creating it with a fresh UUID on first use. A second copy of the app
        /// running at the same time (the file is locked while a transceiver uses it) takes `<file>.2`, a third
        /// `<file>.3`, and so on: each running copy is a peer of its own, and keeps its id across launches.
        case persisted(path: String)
        /// A fresh id for this process only (tests, throwaway tools).
        case ephemeral
        /// This exact id.
        case fixed(PeerID)
    }

    public static let defaultPort = 7206

    public init(
        name: String,
        identity: Identity? = nil,
        listenHost: String? = "::",
        port: Int = TransceiverConfiguration.defaultPort,
        maximumFrameSize: Int = FrameLayout.defaultMaximumBodySize,
        handshakeTimeout: Duration = .seconds(5),
        heartbeatInterval: Duration = .seconds(1),
        heartbeatTimeout: Duration = .seconds(3),
        outboundHighWatermark: Int = 8 * 1024 * 1024,
        outboundLowWatermark: Int = 2 * 1024 * 1024,
        slowPeerTimeout: Duration = .seconds(5),
        maximumConnections: Int? = 256,
        maximumConnectionsPerAddress: Int? = 16,
        idleTimeout: Duration? = nil,
        messageRateLimit: MessageRateLimit? = nil,
        handlersRunOnEventLoop: Bool = true,
        shutdownFlushTimeout: Duration = .seconds(2),
        controlSocketPath: String? = nil,
        discovery: DiscoveryConfiguration? = nil,
        staticPeers: [Endpoint] = [],
        capabilities: [String] = ["heartbeat"],
        sharedSecret: SharedSecret? = nil,
        originalFraming: OriginalFramingSupport? = nil,
        logger: Logger = Logger(label: "parley"),
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) {
        self.name = name
        self.identity = identity ?? .persisted(path: Self.defaultIdentityPath(name: name))
        self.listenHost = listenHost
        self.port = port
        self.maximumFrameSize = maximumFrameSize
        self.handshakeTimeout = handshakeTimeout
        self.heartbeatInterval = heartbeatInterval
        self.heartbeatTimeout = heartbeatTimeout
        self.outboundHighWatermark = outboundHighWatermark
        self.outboundLowWatermark = outboundLowWatermark
        self.slowPeerTimeout = slowPeerTimeout
        self.maximumConnections = maximumConnections
        self.maximumConnectionsPerAddress = maximumConnectionsPerAddress
        self.idleTimeout = idleTimeout
        self.messageRateLimit = messageRateLimit
        self.handlersRunOnEventLoop = handlersRunOnEventLoop
        self.shutdownFlushTimeout = shutdownFlushTimeout
        self.controlSocketPath = controlSocketPath
        self.discovery = discovery
        self.staticPeers = staticPeers
        self.capabilities = capabilities
        self.sharedSecret = sharedSecret
        self.originalFraming = originalFraming
        self.logger = logger
        self.eventLoopGroup = eventLoopGroup
    }

    /// `$XDG_STATE_HOME/parley/<name>.peer-id`, falling back to `~/.local/state`; on Apple platforms the app's
    /// Application Support directory (an iOS app has no other place of its own that lasts). Keyed by name so that
    /// two different apps on one machine get two ids, while one app keeps its id across launches.
    public static func defaultIdentityPath(name: String) -> String {
        stateDirectory().appendingPathComponent("\(fileName(name)).peer-id").path
    }

    /// `$XDG_STATE_HOME/parley/<name>.device/` (on Apple platforms under Application Support): where an app keeps
    /// its device identity and the debuggers it paired with.
    public static func defaultDeviceDirectory(name: String) -> String {
        stateDirectory().appendingPathComponent("\(fileName(name)).device").path
    }

    private static func fileName(_ name: String) -> String {
        String(name.map { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" ? $0 : "_" })
    }

    private static func stateDirectory() -> URL {
        #if canImport(Darwin)
        let base =
            FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask).first
            ?? URL(fileURLWithPath: NSTemporaryDirectory())
        #else
        let environment = ProcessInfo.processInfo.environment
        let base =
            environment["XDG_STATE_HOME"].map { URL(fileURLWithPath: $0) }
            ?? environment["HOME"].map { URL(fileURLWithPath: $0).appendingPathComponent(".local/state") }
            ?? URL(fileURLWithPath: NSTemporaryDirectory())
        #endif
        return base.appendingPathComponent("parley")
    }
}

/// The persisted peer id file exists but cannot be used, or cannot be created.
public enum IdentityError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file holds something other than a peer id (its first 60 characters).
    case notAPeerID(path: String, contents: String)
    /// The file (or its directory) could not be written; `reason` is the system's.
    case cannotCreate(path: String, reason: String)
    /// Every identity file for this name is in use by a running copy (`copies` of them).
    case allInUse(path: String, copies: Int)

    public var path: String {
        switch self {
        case .notAPeerID(let path, _), .cannotCreate(let path, _), .allInUse(let path, _): path
        }
    }

    public var description: String {
        switch self {
        case .notAPeerID(let path, let contents):
            "peer id file \(path): it holds \"\(contents.escapedForPeople())\", not a UUID; delete it to get a new id"
        case .cannotCreate(let path, let reason): "peer id file \(path): cannot create it: \(reason)"
        case .allInUse(let path, let copies):
            "peer id file \(path): \(copies) copies of this app already run on this host, each with an id of its own; "
                + "stop one, or give this one another name"
        }
    }
}

/// How a transceiver takes in apps of the original Swift Talk debugger framing (see ``OriginalFraming``).
public struct OriginalFramingSupport: Sendable {
    /// Turns their frames into messages and back (the debugger provides one).
    public var translator: any OriginalFramingTranslator
    /// With a shared secret: whether such apps, which cannot authenticate, are still let in (unencrypted). Off by
    /// default: with a secret they are refused, with a log line.
    public var allowedWithoutSecret: Bool

    public init(translator: any OriginalFramingTranslator, allowedWithoutSecret: Bool = false) {
        self.translator = translator
        self.allowedWithoutSecret = allowedWithoutSecret
    }
}
