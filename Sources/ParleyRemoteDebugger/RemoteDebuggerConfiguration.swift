import Logging
import NIOCore
import NIOPosix
import Parley
import ParleyWire

/// Where a ``RemoteDebugger`` finds the debugger.
///
/// Discovery takes its DNS-SD implementation the way a transceiver's ``DiscoveryConfiguration`` does, so that
/// this library links no C library unless the app asks for one:
///
/// ```swift
/// import ParleyAvahi
/// .init(appName: "Listr", debugger: .discover(backend: .avahi))
/// ```
public enum DebuggerLocation: Sendable, CustomStringConvertible {
    /// Browse the LAN through `backend` (DNS-SD: `.avahi` from module `ParleyAvahi`, or your own) for this service
    /// type and connect to what is found.
    case discover(backend: DiscoveryBackendFactory, serviceType: String = "_debug._tcp")
    /// A known address (no discovery), e.g. `127.0.0.1:7206` or a host where multicast does not reach.
    case endpoint(host: String, port: Int)

    public var description: String {
        switch self {
        case .discover(let backend, let type): "discovered \(type) services (\(backend.name))"
        case .endpoint(let host, let port): Endpoint(host: host, port: port).description
        }
    }
}

/// How a ``RemoteDebugger`` talks to the debugger.
public enum DebuggerWireProtocol: Sendable, Hashable {
    /// Parley's typed protocol: each record is a `parley.debugger.record` message whose state JSON and screenshot
    /// travel as raw bytes (no base64); states come back as `parley.debugger.restore` messages. Records go only
    /// to peers whose hello lists `parley.debugger.record`.
    case parley
    /// The original Swift Talk framing, byte for byte: byte 206, a 4-byte little-endian length and the JSON
    /// `{"state": …, "action": "…", "imageData": "<base64 PNG>"}`; states come back as 206 frames holding the
    /// bare state JSON. For debuggers that speak nothing else (parleyd understands both).
    case originalFraming
}

/// How a ``RemoteDebugger`` behaves. `.init(appName:debugger:)` is all most apps need.
///
/// Generic over the app's action type only, because the filter and the description of actions depend on it.
public struct RemoteDebuggerConfiguration<Action>: Sendable {
    /// The app's name: shown by the debugger, and (with ``identity`` left `nil`) the key of its stable peer id.
    public var appName: String
    /// Where the debugger is: discovered (on `_debug._tcp` unless told otherwise), or a known address.
    public var debugger: DebuggerLocation
    /// Parley's typed protocol by default.
    public var wireProtocol: DebuggerWireProtocol
    /// How many records may wait for the debugger. When the queue is full the oldest waiting record is dropped
    /// (and counted), so the debugger always gets the newest states and memory stays bounded. At least 1.
    public var queueCapacity: Int
    /// Which actions are recorded; filtered-out actions are counted, never queued or sent.
    public var filter: ActionFilter<Action>
    /// The action's text as the debugger shows it. Runs on the background task, not in `write`.
    public var describeAction: @Sendable (Action) -> String
    /// The app's Parley peer id (`.parley` only). `nil`: persisted per app name, as for any transceiver, so the
    /// debugger sees one app across launches.
    public var identity: TransceiverConfiguration.Identity?
    /// On `stop()`, how long records still queued get to reach a connected debugger.
    public var flushTimeout: Duration
    /// Largest encoded record sent in the original framing, in bytes (the frame body). Larger records are logged,
    /// counted as failed and not sent: the debugger would refuse them and close the connection. (On Parley's
    /// protocol the transceiver's own maximum frame size applies, with the same default.)
    public var maximumRecordSize: Int
    /// The shared secret of a parleyd that requires one (`secretFile`); nil for an open one. Parley's protocol
    /// only: the original framing cannot authenticate.
    public var sharedSecret: SharedSecret?
    /// Which debuggers records go to (docs/security.md). With Parley's protocol ``DebuggerTrust/paired`` unless
    /// set: only debuggers this app paired with, over TLS with its device certificate, a person accepting the first
    /// pairing on the debugger; `.anyOpen` sends to every debugger found, as before pairing existed. The original
    /// framing can only be `.anyOpen`.
    public var trust: DebuggerTrust
    /// Where the app's device identity and the debuggers it paired with are kept (with a trust other than
    /// `.anyOpen`). nil: ``TransceiverConfiguration/defaultDeviceDirectory(name:)`` of the app's name.
    public var deviceDirectory: String?
    public var logger: Logger
    /// The event loops the connection to the debugger runs on, with either wire protocol (as
    /// ``TransceiverConfiguration/eventLoopGroup``): NIO's shared socket loops by default; on an Apple platform a
    /// `NIOTSEventLoopGroup` (NIOTransportServices) runs it on Network.framework (docs/apple.md).
    public var eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton

    public init(
        appName: String,
        debugger: DebuggerLocation,
        wireProtocol: DebuggerWireProtocol = .parley,
        queueCapacity: Int = 32,
        filter: ActionFilter<Action> = .all,
        describeAction: @escaping @Sendable (Action) -> String = { String(describing: $0) },
        identity: TransceiverConfiguration.Identity? = nil,
        flushTimeout: Duration = .seconds(2),
        maximumRecordSize: Int = FrameLayout.defaultMaximumBodySize,
        trust: DebuggerTrust? = nil,
        logger: Logger = Logger(label: "parley.remote-debugger")
    ) {
        self.appName = appName
        self.trust = trust ?? (wireProtocol == .originalFraming ? .anyOpen : .paired)
        self.debugger = debugger
        self.wireProtocol = wireProtocol
        self.queueCapacity = queueCapacity
        self.filter = filter
        self.describeAction = describeAction
        self.identity = identity
        self.flushTimeout = flushTimeout
        self.maximumRecordSize = maximumRecordSize
        self.logger = logger
    }

    /// Checks what `init` cannot: the capacity, the service type, and a trust the wire protocol can keep.
    func validate() throws(RemoteDebuggerError) {
        guard queueCapacity >= 1 else { throw .invalidQueueCapacity(queueCapacity) }
        if wireProtocol == .originalFraming, trust != .anyOpen { throw .trustNeedsParleyProtocol(trust) }
        if case .discover(_, let type) = debugger {
            do {
                _ = try ServiceType(type)
            } catch {
                throw .invalidServiceType(type, reason: error.description)
            }
        }
    }
}
