import ArgumentParser

/// parleyd's command line: the top configuration layer. Values are taken as text and validated by
/// ``ConfigurationLoader`` like those of the other layers, so that every bad value gets the same error.
public struct CommandLineOptions: ParsableCommand, Sendable {
    public static let configuration = CommandConfiguration(
        commandName: "parleyd",
        // Not called: parleyd's own main parses these options and runs the daemon (Parleyd.main). A command rather
        // than plain arguments so that help, --version and the man page carry parleyd's name.
        abstract: "The Parley daemon: a long-running Parley node on this machine.",
        discussion: """
            Configuration, highest precedence first: these flags, PARLEY_* environment variables, the config \
            file (JSON; --config, PARLEY_CONFIG, default /etc/parley/parleyd.json), defaults. See \
            docs/operations.md. Exit status: 0 after a clean shutdown, 1 on a runtime failure, 2 on a \
            configuration or usage error.
            """,
        version: Parleyd.version
    )

    @Option(name: .long, help: ArgumentHelp("Config file (JSON).", valueName: "file"))
    public var config: String?

    @Option(name: .long, help: "Name in the handshake and the advertised instance name.")
    public var name: String?

    @Option(name: .long, help: "TCP port (0: any free port).")
    public var port: String?

    @Option(name: .long, help: ArgumentHelp("The address peers connect to (default :: — every address).", valueName: "address"))
    public var listenHost: String?

    @Option(name: .long, help: "DNS-SD service type.")
    public var serviceType: String?

    @Flag(inversion: .prefixedNo, help: "Advertise, browse and auto-connect through avahi-daemon.")
    public var discovery: Bool?

    @Option(name: .long, help: ArgumentHelp("Which discovered peers to connect to.", valueName: "all|none"))
    public var autoConnect: String?

    @Option(name: .long, help: ArgumentHelp("A peer to keep connected (repeatable); replaces staticPeers.", valueName: "host:port"))
    public var staticPeer: [String] = []

    @Option(name: .long, help: ArgumentHelp("A unicast DNS domain to browse besides the link (repeatable); replaces browseDomains.", valueName: "domain"))
    public var browseDomain: [String] = []

    @Option(name: .long, help: ArgumentHelp("Use only interfaces matching this name or pattern (repeatable); replaces interfacesAllow.", valueName: "pattern"))
    public var interfaceAllow: [String] = []

    @Option(name: .long, help: ArgumentHelp("Never use interfaces matching this name or pattern (repeatable); replaces interfacesDeny.", valueName: "pattern"))
    public var interfaceDeny: [String] = []

    @Option(name: .long, help: ArgumentHelp("Register this node in this DNS zone by DNS UPDATE.", valueName: "domain"))
    public var dnsUpdateDomain: String?

    @Option(name: .long, help: ArgumentHelp("The DNS server accepting updates for the zone (default: its primary).", valueName: "host[:port]"))
    public var dnsUpdateServer: String?

    @Option(name: .long, help: ArgumentHelp("TSIG key file (tsig-keygen) signing the updates.", valueName: "file"))
    public var dnsUpdateKeyFile: String?

    @Option(name: .long, help: ArgumentHelp("Time to live of the registered records, in seconds.", valueName: "seconds"))
    public var dnsUpdateTimeToLive: String?

    @Option(name: .long, help: ArgumentHelp("Control socket path.", valueName: "path"))
    public var controlSocket: String?

    @Option(name: .long, help: ArgumentHelp("Directory for the peer id and other state.", valueName: "path"))
    public var dataDirectory: String?

    @Option(name: .long, help: ArgumentHelp("Largest frame body, in bytes.", valueName: "bytes"))
    public var maxFrameSize: String?

    @Option(name: .long, help: ArgumentHelp("Connections accepted at once (0: no limit).", valueName: "count"))
    public var maxConnections: String?

    @Option(name: .long, help: ArgumentHelp("Connections accepted at once from one IP address (0: no limit).", valueName: "count"))
    public var maxConnectionsPerAddress: String?

    @Option(name: .long, help: ArgumentHelp("Connections held before their handshake, in a pool of their own (0: no pool).", valueName: "count"))
    public var maxPendingConnections: String?

    @Option(name: .long, help: ArgumentHelp("Time a new connection has to send its hello.", valueName: "duration"))
    public var handshakeTimeout: String?

    @Option(name: .long, help: ArgumentHelp("Close a connection with no message either way for this long (0: never).", valueName: "duration"))
    public var idleTimeout: String?

    @Option(name: .long, help: ArgumentHelp("Bytes queued towards one peer before senders wait.", valueName: "bytes"))
    public var maxOutboundQueueBytes: String?

    @Option(name: .long, help: ArgumentHelp("The two states of a diff together, at most.", valueName: "bytes"))
    public var diffMaxBytes: String?

    @Option(name: .long, help: ArgumentHelp("How long a diff may run before it is given up.", valueName: "duration"))
    public var diffTimeLimit: String?

    @Option(name: .long, help: ArgumentHelp("Bytes held at most for all connections: frames arriving and queues (0: no budget).", valueName: "bytes"))
    public var memoryBudget: String?

    @Option(name: .long, help: ArgumentHelp("Close a connection whose frame in progress gets no byte for this long (0: never).", valueName: "duration"))
    public var frameStallTimeout: String?

    @Option(name: .long, help: ArgumentHelp("Frames a peer may send per second on average (0: no limit).", valueName: "rate"))
    public var maxMessagesPerSecond: String?

    @Option(name: .long, help: ArgumentHelp("Frames a peer may send at once above its rate.", valueName: "count"))
    public var messageBurst: String?

    @Option(name: .long, help: ArgumentHelp("trace, debug, info, notice, warning, error or critical.", valueName: "level"))
    public var logLevel: String?

    @Option(name: .long, help: ArgumentHelp("Shared secret file (mode 0600): LAN peers must know it; traffic is encrypted. None: open.", valueName: "file"))
    public var secretFile: String?

    @Flag(inversion: .prefixedNo, help: "With a secret: still accept apps in the original Swift Talk debugger framing (0xCE), unauthenticated.")
    public var allowOriginalFramingWithoutSecret: Bool?

    @Option(name: .long, help: ArgumentHelp("Where the web debugger listens, or off (default 127.0.0.1:7207).", valueName: "host:port"))
    public var webListen: String?

    @Option(name: .long, help: ArgumentHelp("The web debugger's access token file (mode 0600); needed to listen beyond loopback.", valueName: "file"))
    public var webTokenFile: String?

    @Option(name: .long, help: ArgumentHelp("Serve the web debugger's pages from this folder (for working on them).", valueName: "dir"))
    public var webAssetsDirectory: String?

    @Option(name: .long, help: ArgumentHelp("Where parleyd receives OpenTelemetry over HTTP (OTLP), or off (default 127.0.0.1:4318).", valueName: "host:port"))
    public var otlpListen: String?

    @Option(name: .long, help: ArgumentHelp("Send every log record and span on to this OTLP/HTTP receiver (a Collector), or off.", valueName: "url"))
    public var otlpForward: String?

    @Option(name: .long, help: ArgumentHelp("Headers of each forwarded export, as OTEL_EXPORTER_OTLP_HEADERS writes them.", valueName: "headers"))
    public var otlpForwardHeaders: String?

    public init() {}

    /// The values given on the command line, by key.
    var values: [ConfigurationKey: ConfigurationValue] {
        var values: [ConfigurationKey: ConfigurationValue] = [:]
        values[.name] = name.map(ConfigurationValue.string)
        values[.port] = port.map(ConfigurationValue.string)
        values[.listenHost] = listenHost.map(ConfigurationValue.string)
        values[.serviceType] = serviceType.map(ConfigurationValue.string)
        values[.discovery] = discovery.map(ConfigurationValue.bool)
        values[.autoConnect] = autoConnect.map(ConfigurationValue.string)
        if !staticPeer.isEmpty { values[.staticPeers] = .list(staticPeer.map(ConfigurationValue.string)) }
        if !browseDomain.isEmpty { values[.browseDomains] = .list(browseDomain.map(ConfigurationValue.string)) }
        if !interfaceAllow.isEmpty { values[.interfacesAllow] = .list(interfaceAllow.map(ConfigurationValue.string)) }
        if !interfaceDeny.isEmpty { values[.interfacesDeny] = .list(interfaceDeny.map(ConfigurationValue.string)) }
        values[.dnsUpdateDomain] = dnsUpdateDomain.map(ConfigurationValue.string)
        values[.dnsUpdateServer] = dnsUpdateServer.map(ConfigurationValue.string)
        values[.dnsUpdateKeyFile] = dnsUpdateKeyFile.map(ConfigurationValue.string)
        values[.dnsUpdateTimeToLive] = dnsUpdateTimeToLive.map(ConfigurationValue.string)
        values[.controlSocket] = controlSocket.map(ConfigurationValue.string)
        values[.dataDirectory] = dataDirectory.map(ConfigurationValue.string)
        values[.maxFrameSize] = maxFrameSize.map(ConfigurationValue.string)
        values[.maxConnections] = maxConnections.map(ConfigurationValue.string)
        values[.maxConnectionsPerAddress] = maxConnectionsPerAddress.map(ConfigurationValue.string)
        values[.handshakeTimeout] = handshakeTimeout.map(ConfigurationValue.string)
        values[.idleTimeout] = idleTimeout.map(ConfigurationValue.string)
        values[.maxOutboundQueueBytes] = maxOutboundQueueBytes.map(ConfigurationValue.string)
        values[.maxPendingConnections] = maxPendingConnections.map(ConfigurationValue.string)
        values[.memoryBudget] = memoryBudget.map(ConfigurationValue.string)
        values[.diffMaxBytes] = diffMaxBytes.map(ConfigurationValue.string)
        values[.diffTimeLimit] = diffTimeLimit.map(ConfigurationValue.string)
        values[.frameStallTimeout] = frameStallTimeout.map(ConfigurationValue.string)
        values[.maxMessagesPerSecond] = maxMessagesPerSecond.map(ConfigurationValue.string)
        values[.messageBurst] = messageBurst.map(ConfigurationValue.string)
        values[.logLevel] = logLevel.map(ConfigurationValue.string)
        values[.secretFile] = secretFile.map(ConfigurationValue.string)
        values[.allowOriginalFramingWithoutSecret] = allowOriginalFramingWithoutSecret.map(ConfigurationValue.bool)
        values[.webListen] = webListen.map(ConfigurationValue.string)
        values[.webTokenFile] = webTokenFile.map(ConfigurationValue.string)
        values[.webAssetsDirectory] = webAssetsDirectory.map(ConfigurationValue.string)
        values[.otlpListen] = otlpListen.map(ConfigurationValue.string)
        values[.otlpForward] = otlpForward.map(ConfigurationValue.string)
        values[.otlpForwardHeaders] = otlpForwardHeaders.map(ConfigurationValue.string)
        return values
    }
}
