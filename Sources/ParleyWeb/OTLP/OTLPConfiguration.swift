import Foundation

/// Where parleyd receives OpenTelemetry (OTLP over HTTP) and who may send it.
public struct OTLPConfiguration: Sendable, Hashable {
    /// OTLP/HTTP's default port: an OpenTelemetry SDK with nothing configured sends to `http://localhost:4318`.
    public static let defaultPort = 4318
    public static let defaultHost = "127.0.0.1"

    public var host: String
    /// 0: any free port (tests).
    public var port: Int
    /// What every export must carry as `Authorization: Bearer …` (OTLP exporters send it from
    /// `OTEL_EXPORTER_OTLP_HEADERS`); nil: none, allowed on loopback only (``problem``).
    public var token: String?
    /// Names requests may carry in `Host` besides the loopback names and `host`.
    public var extraHostNames: [String]
    /// A request body at most, as sent and once decompressed; past it, 413.
    public var maxBodyBytes = 16 << 20
    /// Exports being decoded and stored at once at most; more are answered 429 with `Retry-After`, which OTLP
    /// exporters honour by retrying later.
    public var maxConcurrentExports = 8
    /// Messages (resources, spans, log records, events, links, attributes, values) in one export at most, counted
    /// before decoding; past it, 413. Decoding holds some 80 bytes for each however few bytes it was sent in (an
    /// empty attribute is 2), so this, not the body's size, is what bounds an export's memory: about 40 MiB. A
    /// batch of 512 spans with 128 attributes each is 66 000.
    public var maxMessagesPerExport = 500_000
    /// Messages being decoded at once, all exports together; an export that would go past it is answered 429 with
    /// `Retry-After`. One export alone is always let through.
    public var maxMessagesInFlight = 1_000_000
    /// Open connections at most; more are closed at once.
    public var maxConnections = 64
    /// How long a connection may take to send a request head, and stay idle between requests.
    public var headerTimeout = Duration.seconds(10)
    /// How long a body may stop arriving before the connection is closed.
    public var stallTimeout = Duration.seconds(30)

    public init(host: String = Self.defaultHost, port: Int = Self.defaultPort, token: String? = nil, extraHostNames: [String] = []) {
        self.host = host
        self.port = port
        self.token = token
        self.extraHostNames = extraHostNames
    }

    public var isLoopback: Bool { WebConfiguration.isLoopback(host) }

    /// Why this configuration cannot be used, or nil.
    public var problem: String? {
        if !isLoopback && token == nil {
            return "the OTLP receiver would listen on \(host), which is not loopback, without a token: anyone on the network could write into the history; give it the web debugger's token (webTokenFile), or listen on 127.0.0.1"
        }
        if !(0...65535).contains(port) { return "port \(port) is not a TCP port (0–65535)" }
        return nil
    }

    /// The endpoint an exporter is given (`OTEL_EXPORTER_OTLP_ENDPOINT`).
    public func endpoint(port boundPort: Int) -> String {
        let shownHost = host == "0.0.0.0" || host == "::" ? "127.0.0.1" : host
        return "http://\(shownHost.contains(":") ? "[\(shownHost)]" : shownHost):\(boundPort)"
    }
}
