import Foundation
import ParleyTelemetry

/// One app connection as the history remembers it (parleyd ⇄ parleyctl).
public struct SessionSummary: Sendable, Hashable, Codable {
    /// How the app talks to parleyd.
    public enum Kind: String, Sendable, Hashable, Codable, CustomStringConvertible {
        /// Parley's typed protocol (`parley.debugger.record`).
        case parley
        /// The original Swift Talk debugger framing (`0xCE`, JSON).
        case original
        /// OpenTelemetry over HTTP (OTLP): a service instance's exports, from any language.
        case otlp

        public var description: String { rawValue }

        /// Reads a kind as written in a history export. Exports of Parley 0.x name the original framing "legacy".
        public init?(exported name: String) {
            self.init(rawValue: name == "legacy" ? Self.original.rawValue : name)
        }
    }

    public var id: Int64
    public var peerID: String
    public var appName: String
    public var kind: Kind
    /// The address the app connected from, as people write it (`10.0.0.7`, `fe80::1%eth0`); nil for imported
    /// sessions and for sessions recorded before parleyd kept it.
    public var host: String?
    /// Read from an export file rather than recorded from a connection.
    public var imported: Bool
    public var started: Date
    /// When the app disconnected; nil while it is connected. After a crash of parleyd, the time of the session's
    /// last entry.
    public var ended: Date?
    /// Entries (recorded states) still in the history (retention may have dropped older ones).
    public var entryCount: Int
    /// State and screenshot bytes of those entries.
    public var bytes: Int64
    /// The app's log records still in the history. Read as 0 from a peer that does not send it.
    public var logCount: Int
    /// The app's spans still in the history. Read as 0 from a peer that does not send it.
    public var spanCount: Int
    /// An OpenTelemetry session's resource attributes (`service.name`, `service.instance.id`, `telemetry.sdk.*`);
    /// empty for the others. Read as empty from a peer that does not send it.
    public var resource: TelemetryAttributes

    public init(
        id: Int64, peerID: String, appName: String, kind: Kind, host: String? = nil, imported: Bool = false, started: Date, ended: Date? = nil,
        entryCount: Int = 0, bytes: Int64 = 0, logCount: Int = 0, spanCount: Int = 0, resource: TelemetryAttributes = [:]
    ) {
        self.resource = resource
        self.id = id
        self.peerID = peerID
        self.appName = appName
        self.kind = kind
        self.host = host
        self.imported = imported
        self.started = started
        self.ended = ended
        self.entryCount = entryCount
        self.bytes = bytes
        self.logCount = logCount
        self.spanCount = spanCount
    }

    public var isOpen: Bool { ended == nil }

    private enum CodingKeys: String, CodingKey {
        case id, peerID, appName, kind, host, imported, started, ended, entryCount, bytes, logCount, spanCount, resource
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(Int64.self, forKey: .id)
        peerID = try container.decode(String.self, forKey: .peerID)
        appName = try container.decode(String.self, forKey: .appName)
        kind = try container.decode(Kind.self, forKey: .kind)
        host = try container.decodeIfPresent(String.self, forKey: .host)
        imported = try container.decode(Bool.self, forKey: .imported)
        started = try container.decode(Date.self, forKey: .started)
        ended = try container.decodeIfPresent(Date.self, forKey: .ended)
        entryCount = try container.decode(Int.self, forKey: .entryCount)
        bytes = try container.decode(Int64.self, forKey: .bytes)
        logCount = try container.decodeIfPresent(Int.self, forKey: .logCount) ?? 0
        spanCount = try container.decodeIfPresent(Int.self, forKey: .spanCount) ?? 0
        resource = try container.decodeIfPresent(TelemetryAttributes.self, forKey: .resource) ?? [:]
    }

    /// Every key, always: an open session's `ended` and an unknown `host` are `null`, as docs/web.md shows, so a
    /// client in any language finds each key it reads (a synthesized encoder leaves nil keys out).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(peerID, forKey: .peerID)
        try container.encode(appName, forKey: .appName)
        try container.encode(kind, forKey: .kind)
        try container.encode(host, forKey: .host)
        try container.encode(imported, forKey: .imported)
        try container.encode(started, forKey: .started)
        try container.encode(ended, forKey: .ended)
        try container.encode(entryCount, forKey: .entryCount)
        try container.encode(bytes, forKey: .bytes)
        try container.encode(logCount, forKey: .logCount)
        try container.encode(spanCount, forKey: .spanCount)
        if !resource.isEmpty { try container.encode(resource, forKey: .resource) }
    }
}
