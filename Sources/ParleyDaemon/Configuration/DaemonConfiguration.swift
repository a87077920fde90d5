import Foundation
import Logging
import Parley
import ParleyAvahi
import ParleyControl
import ParleyDNSUpdate
import ParleyDiscovery
import ParleyDebugger
import ParleyHistory

/// parleyd's settings, after layering (see ``ConfigurationLoader``) and validation.
public struct DaemonConfiguration: Sendable, Equatable {
    public enum AutoConnect: String, Sendable, Equatable {
        case all
        case none
    }

    public var name: String
    public var port: Int
    /// The address peers connect to; `::` accepts every address, IPv4 included.
    public var listenHost: String = "::"
    public var serviceType: String
    public var discovery: Bool
    public var autoConnect: AutoConnect
    public var staticPeers: [Endpoint]
    /// Unicast DNS domains browsed besides the link (wide-area DNS-SD).
    public var browseDomains: [String] = []
    /// The interfaces advertised on, browsed on and accepted on.
    public var interfaces: InterfaceFilter = .standard
    /// Registration in a DNS zone by DNS UPDATE; nil: none.
    public var dnsUpdateDomain: String? = nil
    public var dnsUpdateServer: String? = nil
    public var dnsUpdateKeyFile: String? = nil
    public var dnsUpdateTimeToLive: Int = 30
    public var controlSocket: String
    public var dataDirectory: String
    public var maxFrameSize: Int
    /// 0: no limit.
    public var maxConnections: Int
    /// 0: no limit.
    public var maxConnectionsPerAddress: Int
    /// Connections before their handshake, held in a pool of their own; 0: no pool.
    public var maxPendingConnections: Int
    public var handshakeTimeout: Duration
    /// `.zero`: off.
    public var idleTimeout: Duration
    public var maxOutboundQueueBytes: Int
    /// Bytes held at most for all connections together (frames arriving, queues); 0: no budget.
    public var memoryBudget: Int
    /// `.zero`: off.
    public var frameStallTimeout: Duration
    /// 0: no limit.
    public var maxMessagesPerSecond: Double
    public var messageBurst: Int
    public var logLevel: Logger.Level
    /// The debugger history's retention limits.
    public var historyLimits: RetentionLimits
    /// The two states of a `parleyctl diff` together, at most (a diff costs seconds and several times this in memory).
    public var diffMaxBytes: Int
    /// How long a diff may run (on the blocking-work pool) before it is given up.
    public var diffTimeLimit: Duration
    /// Named action filters for `parleyctl history --filter NAME`.
    public var actionFilters: [String: ActionTextFilter]
    /// The shared secret file; `nil`: open mode. Loaded (and checked) by ``ConfigurationLoader``.
    public var secretFile: String?
    /// The secret read from ``secretFile``. Not part of equality: a reload compares the path.
    public var sharedSecret: SharedSecret?
    public var allowOriginalFramingWithoutSecret: Bool
    /// Where the web debugger listens; nil: off.
    public var webListen: Endpoint?
    public var webTokenFile: String?
    /// The token read from ``webTokenFile``. Not part of equality: a reload compares the path.
    public var webToken: String?
    public var webAssetsDirectory: String?
    /// Where the OTLP/HTTP receiver listens; nil: off. Beyond loopback it needs the web debugger's token.
    public var otlpListen: Endpoint?
    /// The OTLP/HTTP receiver everything stored is sent on to; nil: none.
    public var otlpForward: URL? = nil
    /// Headers sent with each forwarded export (`authorization`, a tenant id), in order.
    public var otlpForwardHeaders: [OTLPForwardHeader] = []
    /// Where each key's value came from (for the start-up log). Not part of equality.
    public var sources: [ConfigurationKey: ConfigurationSource] = [:]

    public static let defaultConfigFile = "/etc/parley/parleyd.json"
    public static let maxFrameSizeRange = 1024...(1 << 30)
    public static let connectionLimitRange = 0...65536
    public static let handshakeTimeoutRange = Duration.milliseconds(100)...Duration.seconds(600)
    public static let idleTimeoutRange = Duration.seconds(1)...Duration.seconds(30 * 86400)
    public static let outboundQueueRange = (64 * 1024)...(1 << 30)
    public static let memoryBudgetRange = (16 << 20)...(1 << 40)
    public static let diffMaxBytesRange = (1 << 20)...(1 << 30)
    public static let diffTimeLimitRange = Duration.seconds(1)...Duration.seconds(600)
    public static let frameStallTimeoutRange = Duration.seconds(1)...Duration.seconds(600)
    public static let messageRateRange = 0.0...1_000_000.0
    public static let messageBurstRange = 1...1_000_000

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.changedKeys(from: rhs).isEmpty }

    /// The keys whose values differ between `self` and `other`.
    public func changedKeys(from other: Self) -> [ConfigurationKey] {
        ConfigurationKey.allCases.filter { key in
            switch key {
            case .name: name != other.name
            case .port: port != other.port
            case .listenHost: listenHost != other.listenHost
            case .serviceType: serviceType != other.serviceType
            case .discovery: discovery != other.discovery
            case .autoConnect: autoConnect != other.autoConnect
            case .staticPeers: staticPeers != other.staticPeers
            case .browseDomains: browseDomains != other.browseDomains
            case .interfacesAllow: interfaces.allow != other.interfaces.allow
            case .interfacesDeny: interfaces.deny != other.interfaces.deny
            case .dnsUpdateDomain: dnsUpdateDomain != other.dnsUpdateDomain
            case .dnsUpdateServer: dnsUpdateServer != other.dnsUpdateServer
            case .dnsUpdateKeyFile: dnsUpdateKeyFile != other.dnsUpdateKeyFile
            case .dnsUpdateTimeToLive: dnsUpdateTimeToLive != other.dnsUpdateTimeToLive
            case .controlSocket: controlSocket != other.controlSocket
            case .dataDirectory: dataDirectory != other.dataDirectory
            case .maxFrameSize: maxFrameSize != other.maxFrameSize
            case .maxConnections: maxConnections != other.maxConnections
            case .maxConnectionsPerAddress: maxConnectionsPerAddress != other.maxConnectionsPerAddress
            case .maxPendingConnections: maxPendingConnections != other.maxPendingConnections
            case .handshakeTimeout: handshakeTimeout != other.handshakeTimeout
            case .idleTimeout: idleTimeout != other.idleTimeout
            case .maxOutboundQueueBytes: maxOutboundQueueBytes != other.maxOutboundQueueBytes
            case .memoryBudget: memoryBudget != other.memoryBudget
            case .diffMaxBytes: diffMaxBytes != other.diffMaxBytes
            case .diffTimeLimit: diffTimeLimit != other.diffTimeLimit
            case .frameStallTimeout: frameStallTimeout != other.frameStallTimeout
            case .maxMessagesPerSecond: maxMessagesPerSecond != other.maxMessagesPerSecond
            case .messageBurst: messageBurst != other.messageBurst
            case .logLevel: logLevel != other.logLevel
            case .historyMaxEntries: historyLimits.maxEntries != other.historyLimits.maxEntries
            case .historyMaxBytes: historyLimits.maxBytes != other.historyLimits.maxBytes
            case .actionFilters: actionFilters != other.actionFilters
            case .secretFile: secretFile != other.secretFile
            case .allowOriginalFramingWithoutSecret: allowOriginalFramingWithoutSecret != other.allowOriginalFramingWithoutSecret
            case .webListen: webListen != other.webListen
            case .webTokenFile: webTokenFile != other.webTokenFile
            case .webAssetsDirectory: webAssetsDirectory != other.webAssetsDirectory
            case .otlpListen: otlpListen != other.otlpListen
            case .otlpForward: otlpForward != other.otlpForward
            case .otlpForwardHeaders: otlpForwardHeaders != other.otlpForwardHeaders
            }
        }
    }

    /// The value of `key` as text, for logs.
    public func valueDescription(_ key: ConfigurationKey) -> String {
        switch key {
        case .name: name
        case .port: String(port)
        case .listenHost: listenHost
        case .serviceType: serviceType
        case .discovery: String(discovery)
        case .autoConnect: autoConnect.rawValue
        case .staticPeers: staticPeers.isEmpty ? "[]" : staticPeers.map(\.description).joined(separator: ",")
        case .browseDomains: browseDomains.isEmpty ? "[]" : browseDomains.joined(separator: ",")
        case .interfacesAllow: interfaces.allow.isEmpty ? "[] (every interface not denied)" : interfaces.allow.joined(separator: ",")
        case .interfacesDeny: interfaces.effectiveDeny.isEmpty ? "[]" : interfaces.effectiveDeny.joined(separator: ",")
        case .dnsUpdateDomain: dnsUpdateDomain ?? "none"
        case .dnsUpdateServer: dnsUpdateServer ?? "the zone's primary"
        case .dnsUpdateKeyFile: dnsUpdateKeyFile ?? "none"
        case .dnsUpdateTimeToLive: String(dnsUpdateTimeToLive)
        case .controlSocket: controlSocket
        case .dataDirectory: dataDirectory
        case .maxFrameSize: String(maxFrameSize)
        case .maxConnections: String(maxConnections)
        case .maxConnectionsPerAddress: String(maxConnectionsPerAddress)
        case .maxPendingConnections: String(maxPendingConnections)
        case .handshakeTimeout: Self.text(handshakeTimeout)
        case .idleTimeout: Self.text(idleTimeout)
        case .maxOutboundQueueBytes: String(maxOutboundQueueBytes)
        case .memoryBudget: String(memoryBudget)
        case .diffMaxBytes: String(diffMaxBytes)
        case .diffTimeLimit: Self.text(diffTimeLimit)
        case .frameStallTimeout: Self.text(frameStallTimeout)
        case .maxMessagesPerSecond: maxMessagesPerSecond == maxMessagesPerSecond.rounded() ? String(Int(maxMessagesPerSecond)) : String(maxMessagesPerSecond)
        case .messageBurst: String(messageBurst)
        case .logLevel: logLevel.rawValue
        case .historyMaxEntries: String(historyLimits.maxEntries)
        case .historyMaxBytes: String(historyLimits.maxBytes)
        case .actionFilters: actionFilters.keys.sorted().map { "\($0)=\(actionFilters[$0]!)" }.joined(separator: " ")
        case .secretFile: secretFile ?? "none (open)"
        case .allowOriginalFramingWithoutSecret: String(allowOriginalFramingWithoutSecret)
        case .webListen: webListen?.description ?? "off"
        case .webTokenFile: webTokenFile ?? "none"
        case .webAssetsDirectory: webAssetsDirectory ?? "built in"
        case .otlpListen: otlpListen?.description ?? "off"
        case .otlpForward: otlpForward?.absoluteString ?? "off"
        // The values are credentials more often than not: the names say enough.
        case .otlpForwardHeaders: otlpForwardHeaders.isEmpty ? "none" : otlpForwardHeaders.map { "\($0.name)=…" }.joined(separator: ",")
        }
    }

    /// A duration as seconds, the way the configuration accepts it back (`5s`, `0.5s`).
    static func text(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        return attoseconds == 0 ? "\(seconds)s" : "\(Double(seconds) + Double(attoseconds) / 1e18)s"
    }

    /// The file holding the node's stable peer id.
    public var peerIDPath: String { URL(fileURLWithPath: dataDirectory).appendingPathComponent("peer-id").path }

    /// The transceiver's configuration: listens on `listenHost` at `port`, identity persisted in the data
    /// directory, discovery (advertise + browse `serviceType`, instance name `name`) unless turned off.
    public func transceiverConfiguration(logger: Logger) -> TransceiverConfiguration {
        var configuration = TransceiverConfiguration(
            name: name,
            identity: .persisted(path: peerIDPath),
            listenHost: listenHost,
            port: port,
            maximumFrameSize: maxFrameSize,
            handshakeTimeout: handshakeTimeout,
            // Senders wait above the limit and resume below a quarter of it (the library's 8 MiB / 2 MiB ratio).
            outboundHighWatermark: maxOutboundQueueBytes,
            outboundLowWatermark: maxOutboundQueueBytes / 4,
            maximumConnections: maxConnections == 0 ? nil : maxConnections,
            maximumConnectionsPerAddress: maxConnectionsPerAddress == 0 ? nil : maxConnectionsPerAddress,
            idleTimeout: idleTimeout == .zero ? nil : idleTimeout,
            messageRateLimit: maxMessagesPerSecond == 0 ? nil : MessageRateLimit(perSecond: maxMessagesPerSecond, burst: messageBurst),
            controlSocketPath: controlSocket,
            discovery: discovery
                ? DiscoveryConfiguration(
                    backend: discoveryBackend,
                    serviceType: serviceType,
                    instanceName: name,
                    autoConnect: autoConnect == .all ? .all : .none,
                    browseDomains: browseDomains,
                    interfaces: interfaces
                )
                : nil,
            staticPeers: staticPeers,
            sharedSecret: sharedSecret,
            originalFraming: OriginalFramingSupport(
                translator: OriginalDebuggerTranslator(), allowedWithoutSecret: allowOriginalFramingWithoutSecret
            ),
            logger: logger
        )
        configuration.memoryBudget = memoryBudget == 0 ? nil : memoryBudget
        configuration.maximumPendingConnections = maxPendingConnections == 0 ? nil : maxPendingConnections
        configuration.frameStallTimeout = frameStallTimeout == .zero ? nil : frameStallTimeout
        configuration.listenInterfaces = interfaces
        return configuration
    }

    /// Avahi, registering in DNS as well when a zone is configured.
    private var discoveryBackend: DiscoveryBackendFactory {
        guard let dnsUpdateDomain, let dnsUpdateKeyFile else { return .avahi }
        return DiscoveryBackendFactory.avahi.registering(
            in: DNSUpdateSettings(
                domain: dnsUpdateDomain, server: dnsUpdateServer, keyFile: dnsUpdateKeyFile, ttl: dnsUpdateTimeToLive,
                interfaces: interfaces, hostLabel: name))
    }
}

// MARK: - Defaults

extension DaemonConfiguration {
    /// The defaults; some depend on the environment (systemd's directories, XDG's, the host name).
    public static func defaults(environment: [String: String]) -> DaemonConfiguration {
        DaemonConfiguration(
            name: defaultName(),
            port: TransceiverConfiguration.defaultPort,
            serviceType: "_debug._tcp",
            discovery: true,
            autoConnect: .all,
            staticPeers: [],
            controlSocket: ControlSocket.defaultPath(environment: environment),
            dataDirectory: defaultDataDirectory(environment: environment),
            maxFrameSize: 64 * 1024 * 1024,
            maxConnections: 256,
            maxConnectionsPerAddress: 16,
            maxPendingConnections: 256,
            handshakeTimeout: .seconds(5),
            idleTimeout: .seconds(30 * 60),
            maxOutboundQueueBytes: 8 * 1024 * 1024,
            memoryBudget: 256 * 1024 * 1024,
            frameStallTimeout: .seconds(10),
            maxMessagesPerSecond: 1000,
            messageBurst: 2000,
            logLevel: .info,
            historyLimits: .default,
            diffMaxBytes: 32 << 20,
            diffTimeLimit: .seconds(10),
            actionFilters: [:],
            secretFile: nil,
            sharedSecret: nil,
            allowOriginalFramingWithoutSecret: false,
            webListen: Endpoint(host: "127.0.0.1", port: 7207),
            webTokenFile: nil,
            webToken: nil,
            webAssetsDirectory: nil,
            otlpListen: Endpoint(host: "127.0.0.1", port: 4318),
            sources: Dictionary(uniqueKeysWithValues: ConfigurationKey.allCases.map { ($0, .defaults) })
        )
    }

    /// The names a request to parleyd's HTTP faces may carry in `Host` besides loopback and addresses: this
    /// machine's short name and parleyd's name, each also under `.local`.
    static func hostNames(name: String) -> [String] {
        [defaultName(), defaultName() + ".local", name, name + ".local"]
    }

    /// The short host name (up to the first dot), or `parleyd`.
    static func defaultName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "parleyd" }
        let host = String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let short = host.split(separator: ".").first.map(String.init) ?? ""
        return short.isEmpty ? "parleyd" : String(decoding: short.utf8.prefix(63), as: UTF8.self)
    }

    /// `$STATE_DIRECTORY` under systemd with `StateDirectory=` (`/var/lib/parley`); else
    /// `$XDG_STATE_HOME/parley`; else `~/.local/state/parley`.
    static func defaultDataDirectory(environment: [String: String]) -> String {
        if let state = ControlSocket.firstPath(environment["STATE_DIRECTORY"]) { return state }
        if let xdg = ControlSocket.firstPath(environment["XDG_STATE_HOME"]) { return xdg + "/parley" }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        return home + "/.local/state/parley"
    }
}
