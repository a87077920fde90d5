import Foundation
import Parley
import ParleyJSON

/// The control requests parleyd answers itself on its control socket, and their replies. Wire names are
/// `parley.control.*`; payloads are JSON like every Parley message. Only local clients (connected over the
/// control socket) get answers; a LAN peer asking receives an error reply.
public enum Control {
    /// `parley.control.WaitForPeer` → ``PeerInfo``: the peer gate through parleyd. Answered when a LAN Parley peer
    /// matching `selector` (a name or an id prefix), or else accepting `acceptingType`, is connected — at once if
    /// one is — or with an error reply (`handler-failed`, naming what was waited for) after `timeoutMilliseconds`.
    /// Waits on parleyd's connection events: nothing polls.
    public struct WaitForPeer: Codable, Sendable, Hashable, NamedMessage {
        public static let messageType = "parley.control.WaitForPeer"
        public var selector: String?
        public var acceptingType: String?
        public var timeoutMilliseconds: Int
        public init(_ wanted: WantedPeer, timeoutMilliseconds: Int) {
            self.selector = wanted.selector
            self.acceptingType = wanted.acceptingType
            self.timeoutMilliseconds = timeoutMilliseconds
        }
        public var wanted: WantedPeer { WantedPeer(selector: selector, acceptingType: acceptingType) }
    }

    /// `parley.control.Peers` → ``PeerList``: a page of the peer list, ordered by id: connected LAN peers and those
    /// only known from discovery (local clients are not listed).
    public struct Peers: Codable, Sendable, Hashable, NamedMessage {
        public static let messageType = "parley.control.Peers"
        /// The most peers one answer holds, whatever `limit` asks: no answer can outgrow a frame.
        public static let pageSize = 500
        /// The id of the last peer of the previous page; nil for the first page.
        public var after: String?
        /// At most this many (1 to ``pageSize``; nil: ``pageSize``).
        public var limit: Int?
        public init(after: String? = nil, limit: Int? = nil) {
            self.after = after
            self.limit = limit
        }
    }

    public struct PeerList: Codable, Sendable, Hashable, NamedMessage {
        public static let messageType = "parley.control.PeerList"
        public var peers: [PeerInfo]
        /// Where the next page starts (`Peers.after`); nil when this page is the last.
        public var nextAfter: String?
        public init(peers: [PeerInfo], nextAfter: String? = nil) {
            self.peers = peers
            self.nextAfter = nextAfter
        }

        /// `all` (ordered by id) cut to the page `request` asks for.
        public static func page(of all: [PeerInfo], for request: Peers) -> PeerList {
            let limit = min(max(request.limit ?? Peers.pageSize, 1), Peers.pageSize)
            let rest = all.drop { peer in request.after.map { peer.id <= $0 } ?? false }
            let page = Array(rest.prefix(limit))
            return PeerList(peers: page, nextAfter: rest.count > limit ? page.last?.id : nil)
        }
    }

    public struct PeerInfo: Codable, Sendable, Hashable, NamedMessage {
        public static let messageType = "parley.control.PeerInfo"
        public var name: String
        public var id: String
        public var address: String
        /// `parley`, or `original` for an app in the original Swift Talk debugger framing.
        public var kind: String
        /// ISO 8601, UTC.
        public var connectedAt: String
        public var messagesIn: Int
        public var messagesOut: Int
        public var accepts: [String]
        /// False for a peer parleyd knows from discovery but is not connected to (yet, or any more).
        public var connected: Bool
        /// Every address known for the peer: the connection's, or the advertised ones.
        public var addresses: [String]
        /// The DNS-SD domain the peer was discovered in ("local" for the link, else a wide-area domain); nil for a
        /// peer discovery does not know (a static peer, one that dialled in).
        public var domain: String?

        public init(
            name: String, id: String, address: String, kind: String, connectedAt: String,
            messagesIn: Int, messagesOut: Int, accepts: [String], connected: Bool = true, addresses: [String]? = nil
        ) {
            self.name = name
            self.id = id
            self.address = address
            self.kind = kind
            self.connectedAt = connectedAt
            self.messagesIn = messagesIn
            self.messagesOut = messagesOut
            self.accepts = accepts
            self.connected = connected
            self.addresses = addresses ?? [address]
        }

        /// A peer seen on the LAN that parleyd is not connected to.
        public init(discovered service: DiscoveredService) {
            let addresses = service.addresses.map { Endpoint(host: $0.connectHost, port: Int(service.port)).description }
            self.init(
                name: service.txt[TXTRecord.ParleyKey.displayName] ?? service.instanceName, id: service.peerID ?? "",
                address: addresses.first ?? "", kind: PeerInfo.parleyKind, connectedAt: "",
                messagesIn: 0, messagesOut: 0, accepts: [], connected: false, addresses: addresses
            )
            domain = service.domain
        }

        /// `peer` with the message counts of its connection.
        public init(_ peer: Peer, counts: (received: Int, sent: Int)) {
            self.init(
                name: peer.name, id: peer.id.rawValue, address: peer.address,
                kind: peer.capabilities.contains(OriginalFraming.capability) ? Self.originalFramingKind : Self.parleyKind,
                connectedAt: Control.timestamp(peer.connectedAt), messagesIn: counts.received,
                messagesOut: counts.sent, accepts: peer.accepts
            )
        }

        public var connectedDate: Date? { Control.date(connectedAt) }

        /// `kind` of a peer speaking Parley's typed protocol.
        public static let parleyKind = "parley"
        /// `kind` of an app of the original Swift Talk debugger (see `OriginalFraming`).
        public static let originalFramingKind = "original"
    }

    /// `parley.control.Status` → ``StatusReport``.
    public struct Status: Codable, Sendable, Hashable, NamedMessage {
        public static let messageType = "parley.control.Status"
        public init() {}
    }

    public struct StatusReport: Codable, Sendable, Hashable, NamedMessage {
        public static let messageType = "parley.control.StatusReport"
        public var name: String
        public var peerID: String
        public var port: Int
        /// The discovery state as text (`off`, `running, advertised as "kitchen"`, …).
        public var discovery: String
        /// The DNS-SD instance name parleyd is advertised under, if any.
        public var advertisedName: String?
        /// Connected LAN peers.
        public var peerCount: Int
        public var uptimeSeconds: Double
        public var version: String
        /// The web debugger's URL (with its access token when one is configured); nil when it is off.
        public var webURL: String?
        /// parleyd's device fingerprint (full form): what devices that pair with it pin.
        public var fingerprint: String?

        public init(
            name: String, peerID: String, port: Int, discovery: String, advertisedName: String?,
            peerCount: Int, uptimeSeconds: Double, version: String, webURL: String? = nil, fingerprint: String? = nil
        ) {
            self.webURL = webURL
            self.fingerprint = fingerprint
            self.name = name
            self.peerID = peerID
            self.port = port
            self.discovery = discovery
            self.advertisedName = advertisedName
            self.peerCount = peerCount
            self.uptimeSeconds = uptimeSeconds
            self.version = version
        }
    }

    /// `parley.control.OTLPEndpoint` → ``OTLPEndpointReport``: where an OpenTelemetry SDK on parleyd's host sends
    /// (`parleyctl otel-env`).
    public struct OTLPEndpoint: Codable, Sendable, Hashable, NamedMessage {
        public static let messageType = "parley.control.OTLPEndpoint"
        public init() {}
    }

    public struct OTLPEndpointReport: Codable, Sendable, Hashable, NamedMessage {
        public static let messageType = "parley.control.OTLPEndpointReport"
        /// The receiver's endpoint (`http://127.0.0.1:4318`); nil when `otlpListen` is off or its port was taken.
        public var endpoint: String?
        /// The bearer token every export must carry (the web debugger's, from `webTokenFile`); nil when none is
        /// needed. Given only to local clients, as the web debugger's sign-in URL is.
        public var token: String?
        public init(endpoint: String?, token: String?) {
            self.endpoint = endpoint
            self.token = token
        }
    }

    /// `parley.control.Subscribe` → ``OK``: from now on, LAN messages of these types (all, when empty) that no
    /// handler of parleyd takes are forwarded to this client as `@<sender id>/<Type>`. A new Subscribe replaces
    /// the previous one; the subscription ends with the connection.
    public struct Subscribe: Codable, Sendable, Hashable, NamedMessage {
        public static let messageType = "parley.control.Subscribe"
        public var types: [String]
        public init(types: [String]) { self.types = types }
    }

    public struct OK: Codable, Sendable, Hashable, NamedMessage {
        public static let messageType = "parley.control.OK"
        public init() {}
    }

    /// `parley.control.Reload` → ``ReloadResult``: the same as SIGHUP. A configuration that does not load is an
    /// error reply naming the problem.
    public struct Reload: Codable, Sendable, Hashable, NamedMessage {
        public static let messageType = "parley.control.Reload"
        public init() {}
    }

    public struct ReloadResult: Codable, Sendable, Hashable, NamedMessage {
        public static let messageType = "parley.control.ReloadResult"
        /// Changed keys that took effect at once.
        public var applied: [String]
        /// Changed keys that take effect only after a restart.
        public var needRestart: [String]
        public init(applied: [String], needRestart: [String]) {
            self.applied = applied
            self.needRestart = needRestart
        }
    }

    /// ISO 8601 in UTC with milliseconds, as every other time parleyd hands out (``PeerInfo/connectedAt``).
    public static func timestamp(_ date: Date) -> String { Timestamp(date).iso8601 }

    /// A time written by ``timestamp(_:)``, or by a parleyd that wrote whole seconds.
    public static func date(_ text: String) -> Date? { Timestamp(iso8601: text)?.date }
}
