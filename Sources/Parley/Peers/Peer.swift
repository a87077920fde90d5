import Foundation
import ParleySecurity

/// A peer's stable identity: a UUID chosen once per installation and sent in every handshake.
public struct PeerID: RawRepresentable, Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    public let rawValue: String

    /// Accepts any UUID string and stores it in lowercase, so that comparisons are stable across languages.
    public init?(rawValue: String) {
        guard let uuid = UUID(uuidString: rawValue) else { return nil }
        self.rawValue = uuid.uuidString.lowercased()
    }

    public init(_ uuid: UUID = UUID()) { self.rawValue = uuid.uuidString.lowercased() }

    public static func < (lhs: PeerID, rhs: PeerID) -> Bool { lhs.rawValue < rhs.rawValue }
    public var description: String { rawValue }
}

/// A remote endpoint to connect to. For an IPv6 link-local address, put the interface in the host: `fe80::1%eth0`.
public struct Endpoint: Sendable, Hashable, Codable, CustomStringConvertible {
    public var host: String
    public var port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Parses `host:port`, `[v6]:port` or `[fe80::1%eth0]:port`.
    public init?(_ text: String) {
        let hostPart: Substring
        let portPart: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else { return nil }
            hostPart = text[text.index(after: text.startIndex)..<close]
            portPart = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":"), text.firstIndex(of: ":") == colon else { return nil }
            hostPart = text[..<colon]
            portPart = text[text.index(after: colon)...]
        }
        guard !hostPart.isEmpty, let port = Int(portPart), (1...65535).contains(port) else { return nil }
        self.init(host: String(hostPart), port: port)
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

/// A connected peer as handlers and the peer gate see it. Equality and hashing use the id only.
public struct Peer: Sendable, Hashable, CustomStringConvertible {
    public let id: PeerID
    public let name: String
    /// The remote address of the connection, e.g. `127.0.0.1:52814`.
    public let address: String
    public let protocolVersion: UInt16
    public let capabilities: [String]
    /// The message type names the peer said it handles.
    public let accepts: [String]
    public let connectedAt: Date
    /// Which connection this peer value was made for (unique in this process). Two values with the same `id` but
    /// different connections are the same peer on different connections: a reconnect, or someone else claiming
    /// the id. Not part of equality.
    public let connectionID: UInt64
    /// The fingerprint of the certificate the peer presented, on a connection authenticated by device
    /// certificates over TLS (``TransceiverConfiguration/devices``); nil on any other.
    public internal(set) var device: DeviceFingerprint?
    /// Connected over the control socket (a local tool such as parleyctl), not over the network.
    public var isLocal: Bool { address.hasPrefix("unix:") }

    public init(
        id: PeerID, name: String, address: String, protocolVersion: UInt16,
        capabilities: [String] = [], accepts: [String] = [], connectedAt: Date = Date(), connectionID: UInt64 = 0
    ) {
        self.connectionID = connectionID
        self.id = id
        self.name = name
        self.address = address
        self.protocolVersion = protocolVersion
        self.capabilities = capabilities
        self.accepts = accepts
        self.connectedAt = connectedAt
    }

    /// This peer on a new connection that replaces `earlier`: connected since `earlier` connected.
    func keepingConnectionTime(of earlier: Peer) -> Peer {
        var peer = Peer(
            id: id, name: name, address: address, protocolVersion: protocolVersion,
            capabilities: capabilities, accepts: accepts, connectedAt: earlier.connectedAt, connectionID: connectionID
        )
        peer.device = device
        return peer
    }

    public static func == (lhs: Peer, rhs: Peer) -> Bool { lhs.id == rhs.id }
    public func hash(into hasher: inout Hasher) { hasher.combine(id) }
    public var description: String { "\(name) (\(id.rawValue.prefix(8)), \(address))" }
    /// The name and the start of the id, as messages that list peers show them: `listr (3f2a9c1e)`.
    public var label: String { "\(name) (\(id.rawValue.prefix(8)))" }
}

/// A change in the set of connected peers.
public enum PeerEvent: Sendable, Hashable {
    case connected(Peer)
    case disconnected(Peer, reason: DisconnectReason)

    /// The peer that connected or left.
    public var peer: Peer {
        switch self {
        case .connected(let peer), .disconnected(let peer, _): peer
        }
    }
}
