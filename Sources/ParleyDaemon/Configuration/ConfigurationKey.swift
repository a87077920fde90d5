/// The keys of parleyd's configuration. The same key is spelled `serviceType` in the config file,
/// `PARLEY_SERVICE_TYPE` in the environment and `--service-type` on the command line.
public enum ConfigurationKey: String, CaseIterable, Sendable, Comparable, CustomStringConvertible {
    case name
    case port
    case listenHost
    case serviceType
    case discovery
    case autoConnect
    case staticPeers
    case browseDomains
    case interfacesAllow
    case interfacesDeny
    case dnsUpdateDomain
    case dnsUpdateServer
    case dnsUpdateKeyFile
    case dnsUpdateTimeToLive
    case controlSocket
    case dataDirectory
    case maxFrameSize
    case maxConnections
    case maxConnectionsPerAddress
    case maxPendingConnections
    case handshakeTimeout
    case idleTimeout
    case maxOutboundQueueBytes
    case memoryBudget
    case frameStallTimeout
    case maxMessagesPerSecond
    case messageBurst
    case logLevel
    case historyMaxEntries
    case historyMaxBytes
    case diffMaxBytes
    case diffTimeLimit
    case actionFilters
    case secretFile
    case allowOriginalFramingWithoutSecret
    case webListen
    case webTokenFile
    case webAssetsDirectory
    case otlpListen
    case otlpForward
    case otlpForwardHeaders

    public var description: String { rawValue }

    /// Keys of earlier versions, with their new names, so that an old config file gets told what to write instead.
    static let renamed: [String: ConfigurationKey] = ["allowUnauthenticatedLegacyApps": .allowOriginalFramingWithoutSecret]

    public static func < (lhs: Self, rhs: Self) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }

    /// `PARLEY_` + the key in upper snake case.
    public var environmentVariable: String { "PARLEY_" + words.joined(separator: "_").uppercased() }

    /// `--` + the key in kebab case (`staticPeers` is `--static-peer`, given once per peer).
    public var flag: String {
        switch self {
        case .staticPeers: "--static-peer"
        case .browseDomains: "--browse-domain"
        case .interfacesAllow: "--interface-allow"
        case .interfacesDeny: "--interface-deny"
        case .discovery: "--[no-]discovery"
        case .allowOriginalFramingWithoutSecret: "--[no-]allow-original-framing-without-secret"
        default: "--" + words.joined(separator: "-")
        }
    }

    private var words: [String] {
        var words: [String] = []
        var current = ""
        for character in rawValue {
            if character.isUppercase, !current.isEmpty {
                words.append(current)
                current = ""
            }
            current.append(Character(character.lowercased()))
        }
        words.append(current)
        return words
    }

    /// What a valid value looks like, as said in error messages and the docs.
    public var allowed: String {
        switch self {
        case .name: "a non-empty name of at most 63 bytes (the DNS-SD instance name)"
        case .port: "an integer from 0 to 65535 (0: any free port)"
        case .listenHost: "a numeric IPv4 or IPv6 address of this host to accept peers on (:: every address, IPv4 included; 0.0.0.0 every IPv4 address); not a name"
        case .serviceType: "a DNS-SD service type such as _debug._tcp (_ + 1-15 letters, digits or hyphens + ._tcp or ._udp)"
        case .discovery: "true or false (on/off, yes/no, 1/0)"
        case .autoConnect: "all or none"
        case .staticPeers: "a list of host:port ([v6]:port for IPv6) endpoints, port 1-65535"
        case .browseDomains: "a list of DNS domain names (office.example.org) to browse besides the link"
        case .interfacesAllow: "a list of interface names or shell patterns (eth0, wl*); empty: every interface not denied"
        case .interfacesDeny: "a list of interface names or shell patterns; default: docker*, br-*, veth*, virbr*, tun*, wg* and other virtual interfaces"
        case .dnsUpdateDomain: "a DNS zone (parley.example.org) to register this node in by DNS UPDATE, or empty for none"
        case .dnsUpdateServer: "HOST, HOST:PORT or [IPv6]:PORT (HOST an IP address or a host name) of the DNS server that accepts updates for dnsUpdateDomain (default: the zone's primary)"
        case .dnsUpdateKeyFile: "an absolute path to a TSIG key file in BIND's format (tsig-keygen), owned by parleyd's user with no access for group or others, required with dnsUpdateDomain"
        case .dnsUpdateTimeToLive: "an integer number of seconds from 1 to 86400: the registered records' time to live"
        case .controlSocket: "an absolute path of at most 107 bytes"
        case .dataDirectory: "an absolute path"
        case .maxFrameSize: "an integer number of bytes from \(DaemonConfiguration.maxFrameSizeRange.lowerBound) to \(DaemonConfiguration.maxFrameSizeRange.upperBound)"
        case .maxConnections: "an integer from 0 to \(DaemonConfiguration.connectionLimitRange.upperBound) (0: no limit)"
        case .maxConnectionsPerAddress: "an integer from 0 to \(DaemonConfiguration.connectionLimitRange.upperBound) (0: no limit)"
        case .maxPendingConnections: "an integer from 0 to \(DaemonConfiguration.connectionLimitRange.upperBound) (0: no separate pool for connections before their handshake)"
        case .handshakeTimeout: "a duration from 0.1 s to 600 s: seconds as a number, or with a unit (500ms, 5s, 2m)"
        case .idleTimeout: "0 (off) or a duration from 1 s to 30 days: seconds as a number, or with a unit (90s, 30m, 2h, 1d)"
        case .maxOutboundQueueBytes: "an integer number of bytes from \(DaemonConfiguration.outboundQueueRange.lowerBound) to \(DaemonConfiguration.outboundQueueRange.upperBound)"
        case .memoryBudget: "0 (no budget) or an integer number of bytes from \(DaemonConfiguration.memoryBudgetRange.lowerBound) (16 MiB) to \(DaemonConfiguration.memoryBudgetRange.upperBound); at least twice maxFrameSize"
        case .frameStallTimeout: "0 (off) or a duration from 1 s to 600 s: seconds as a number, or with a unit (10s, 1m)"
        case .maxMessagesPerSecond: "a number from 0 to \(Int(DaemonConfiguration.messageRateRange.upperBound)) (0: no limit)"
        case .messageBurst: "an integer from 1 to \(DaemonConfiguration.messageBurstRange.upperBound)"
        case .logLevel: "one of trace, debug, info, notice, warning, error, critical"
        case .historyMaxEntries: "an integer from 1 to \(Int32.max) (entries kept in the debugger history)"
        case .historyMaxBytes: "an integer number of bytes from 1048576 (1 MiB) up (what the history keeps: states, screenshots, action texts, rows)"
        case .diffMaxBytes: "an integer number of bytes from \(DaemonConfiguration.diffMaxBytesRange.lowerBound) (1 MiB) to \(DaemonConfiguration.diffMaxBytesRange.upperBound) (1 GiB): the two states of a diff together"
        case .diffTimeLimit: "a duration from 1 s to 600 s: how long a diff may run before it is given up"
        case .actionFilters: "an object of named action filters: a glob string, {\"all\": true}, {\"not\": F}, {\"anyOf\": [F…]}, {\"allExcept\": [F…]} or {\"filter\": \"name\"} (docs/debugger.md)"
        case .secretFile: "an absolute path to a file only its owner can access, holding a shared secret of 32 random bytes (parleyctl secret generate)"
        case .allowOriginalFramingWithoutSecret: "true or false (on/off, yes/no, 1/0)"
        case .webListen: "HOST:PORT ([v6]:PORT for IPv6; port 0: any free port) or off"
        case .webTokenFile: "an absolute path to a file only its owner can access, holding the web debugger's access token (parleyctl secret generate)"
        case .webAssetsDirectory: "an absolute path to a folder holding the web debugger's pages (for working on them; default: the pages built into parleyd)"
        case .otlpListen: "HOST:PORT ([v6]:PORT for IPv6; port 0: any free port) or off: where parleyd receives OpenTelemetry (OTLP over HTTP)"
        case .otlpForward: "off, or the http:// or https:// URL of an OTLP/HTTP receiver (an OpenTelemetry Collector, Jaeger, Tempo, another parleyd) to send every log record and span on to, as OTEL_EXPORTER_OTLP_ENDPOINT takes it: parleyd posts to URL/v1/traces and URL/v1/logs"
        case .otlpForwardHeaders: "headers sent with every forwarded export, as OTEL_EXPORTER_OTLP_HEADERS writes them: name=value pairs separated by commas, values percent-encoded (authorization=Bearer%20TOKEN); in the config file also a JSON object of names and values"
        }
    }

    /// Whether a change of this key takes effect only after a restart (SIGHUP applies the others).
    public var needsRestart: Bool { self != .logLevel && !Self.historySettings.contains(self) }

    /// The debugger history's settings: a reload hands them to the history at once.
    public static let historySettings: Set<ConfigurationKey> = [.historyMaxEntries, .historyMaxBytes, .actionFilters]

    /// Accepts the file spelling (`serviceType`).
    public init?(fileKey: String) { self.init(rawValue: fileKey) }

    /// Accepts the environment spelling (`PARLEY_SERVICE_TYPE`).
    public init?(environmentVariable: String) {
        guard let key = Self.allCases.first(where: { $0.environmentVariable == environmentVariable }) else { return nil }
        self = key
    }
}
