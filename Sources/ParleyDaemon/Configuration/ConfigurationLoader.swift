import Foundation
import ParleyDiscovery
import Logging
import NIOCore
import Parley
import ParleyCommandLine
import ParleyDebugger
import ParleyDNSUpdate
import ParleyWeb

/// Builds parleyd's configuration from four layers, each key taken from the highest layer that sets it:
/// command-line flags, then `PARLEY_…` environment variables, then the config file, then the defaults.
///
/// Written here rather than with apple/swift-configuration: its providers answer lookups of keys the reader
/// asks for but cannot list the keys a file or the environment holds, so an unknown (misspelt) key would pass
/// silently — and parleyd must refuse it. The whole loader is these few lines, with no extra dependency.
public struct ConfigurationLoader: Sendable {
    public static let configVariable = "PARLEY_CONFIG"

    public var options: CommandLineOptions
    public var environment: [String: String]

    public init(options: CommandLineOptions, environment: [String: String]) {
        self.options = options
        self.environment = environment
    }

    /// The config file to read, and whether it was asked for (then it must exist) or is the default.
    public var configFile: (path: String, explicit: Bool) {
        if let path = options.config { return (path, true) }
        if let path = environment[Self.configVariable], !path.isEmpty { return (path, true) }
        return (DaemonConfiguration.defaultConfigFile, false)
    }

    public func load() throws(ConfigurationError) -> DaemonConfiguration {
        var layers: [(ConfigurationSource, [ConfigurationKey: ConfigurationValue])] = []
        if let file = try readFile() { layers.append(file) }
        for (key, value) in try environmentValues() {
            layers.append((.environment(key.environmentVariable), [key: value]))
        }
        for (key, value) in options.values {
            layers.append((.commandLine(key.flag), [key: value]))
        }
        var configuration = DaemonConfiguration.defaults(environment: environment)
        for (source, values) in layers {
            for key in values.keys.sorted() {
                try apply(values[key]!, to: key, source: source, in: &configuration)
            }
        }
        if let web = configuration.webListen, configuration.webToken == nil,
            let problem = WebConfiguration(host: web.host, port: web.port).problem
        {
            throw .conflict("webListen \(web) (from \(configuration.sources[.webListen] ?? .defaults)): \(problem.descriptionNamingSettings)")
        }
        if let otlp = configuration.otlpListen, configuration.webToken == nil, let problem = OTLPConfiguration(host: otlp.host, port: otlp.port).problem {
            throw .conflict("otlpListen \(otlp) (from \(configuration.sources[.otlpListen] ?? .defaults)): \(problem)")
        }
        if let forward = configuration.otlpForward, let listen = configuration.otlpListen, listen.port != 0,
            forward.port == listen.port, let host = forward.host, OTLPForwardHeader.isThisHost(host, listeningOn: listen.host)
        {
            throw .conflict(
                "otlpForward \(forward.absoluteString) (from \(configuration.sources[.otlpForward] ?? .defaults)) is parleyd's own OTLP receiver (otlpListen \(listen), from \(configuration.sources[.otlpListen] ?? .defaults)): every record would come back to be sent again; give the URL of another receiver"
            )
        }
        // Compared as keys: the same 32 bytes in hex in one file and in base64 in the other are the same secret.
        if let token = configuration.webToken, token == configuration.sharedSecret?.fileText.trimmingCharacters(in: .whitespacesAndNewlines) {
            throw .conflict(
                "webTokenFile \(configuration.webTokenFile ?? "") (from \(configuration.sources[.webTokenFile] ?? .defaults)) holds the same key as secretFile \(configuration.secretFile ?? "") (from \(configuration.sources[.secretFile] ?? .defaults)): the token crosses the network in plain HTTP, and whoever reads it there would hold the shared secret; give the web debugger a token of its own (`parleyctl secret generate --output FILE`)"
            )
        }
        // A budget that one largest frame and its copy on the way out cannot fit would close every peer sending one.
        if configuration.memoryBudget != 0 && configuration.memoryBudget < 2 * configuration.maxFrameSize {
            throw .conflict(
                "memoryBudget (\(configuration.memoryBudget) bytes, from \(configuration.sources[.memoryBudget] ?? .defaults)) must be at least twice maxFrameSize (\(configuration.maxFrameSize) bytes, from \(configuration.sources[.maxFrameSize] ?? .defaults)); raise the budget or lower maxFrameSize"
            )
        }
        if let domain = configuration.dnsUpdateDomain, configuration.dnsUpdateKeyFile == nil {
            throw .conflict(
                "dnsUpdateDomain \(domain) (from \(configuration.sources[.dnsUpdateDomain] ?? .defaults)) needs dnsUpdateKeyFile: the DNS server accepts only updates signed with a TSIG key (make one with tsig-keygen and give its file)"
            )
        }
        return configuration
    }

    // MARK: - Layers

    private func readFile() throws(ConfigurationError) -> (ConfigurationSource, [ConfigurationKey: ConfigurationValue])? {
        let (path, explicit) = configFile
        guard FileManager.default.fileExists(atPath: path) else {
            if explicit { throw .unreadableFile(path: path, reason: "no such file") }
            return nil
        }
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw .unreadableFile(path: path, reason: "cannot read it: \(error.localizedDescription)")
        }
        let object: [String: ConfigurationValue]
        do {
            object = try JSONDecoder().decode([String: ConfigurationValue].self, from: data)
        } catch {
            throw .unreadableFile(path: path, reason: "not a JSON object of keys and values (\(Self.describe(error)))")
        }
        let source = ConfigurationSource.file(path)
        var values: [ConfigurationKey: ConfigurationValue] = [:]
        for name in object.keys.sorted() {
            guard let key = ConfigurationKey(fileKey: name) else { throw .unknownKey(name, source: source) }
            values[key] = object[name]
        }
        return (source, values)
    }

    private func environmentValues() throws(ConfigurationError) -> [(ConfigurationKey, ConfigurationValue)] {
        parleyVariables.compactMap { variable in
            ConfigurationKey(environmentVariable: variable).map { ($0, .string(environment[variable]!)) }
        }
    }

    private var parleyVariables: [String] {
        environment.keys.sorted().filter { $0.hasPrefix("PARLEY_") && $0 != Self.configVariable }
    }

    /// `PARLEY_…` variables that name no setting. Not an error: the environment is shared with other programs
    /// (Parley's own scripts export `PARLEY_NETNS_STATE`), unlike the config file, which is parleyd's alone; parleyd
    /// warns about them once at start-up.
    public var unknownEnvironmentVariables: [String] {
        parleyVariables.filter { ConfigurationKey(environmentVariable: $0) == nil }
    }

    // MARK: - Validation

    private func apply(
        _ value: ConfigurationValue,
        to key: ConfigurationKey,
        source: ConfigurationSource,
        in configuration: inout DaemonConfiguration
    ) throws(ConfigurationError) {
        let bad = ConfigurationError.invalidValue(key: key, value: value.description, source: source)
        /// The value as an integer within `range`, or the error naming key, value and source.
        func integer(in range: ClosedRange<Int>) throws(ConfigurationError) -> Int {
            guard let number = Self.integer(value), range.contains(number) else { throw bad }
            return number
        }
        switch key {
        case .name:
            guard case .string(let name) = value, !name.isEmpty, name.utf8.count <= 63 else { throw bad }
            configuration.name = name
        case .port:
            configuration.port = try integer(in: 0...65535)
        case .listenHost:
            // Numeric only: binding parses an address on the spot, while a name would need a lookup at start-up
            // and could stand for several addresses.
            guard case .string(let text) = value, (try? SocketAddress(ipAddress: text, port: 0)) != nil else { throw bad }
            configuration.listenHost = text
        case .serviceType:
            guard case .string(let text) = value, let type = try? ServiceType(text) else { throw bad }
            configuration.serviceType = type.rawValue
        case .discovery:
            guard let on = Self.boolean(value) else { throw bad }
            configuration.discovery = on
        case .autoConnect:
            guard case .string(let text) = value, let policy = DaemonConfiguration.AutoConnect(rawValue: text.lowercased()) else { throw bad }
            configuration.autoConnect = policy
        case .staticPeers:
            let texts = try Self.list(value, bad: bad)
            var endpoints: [Endpoint] = []
            for text in texts {
                guard let endpoint = Endpoint(text) else {
                    throw .invalidValue(key: key, value: ConfigurationValue.string(text).description, source: source)
                }
                endpoints.append(endpoint)
            }
            configuration.staticPeers = endpoints
        case .browseDomains:
            let domains = try Self.list(value, bad: bad)
            guard domains.allSatisfy(Self.isDomainName) else { throw bad }
            configuration.browseDomains = domains
        case .interfacesAllow:
            let patterns = try Self.list(value, bad: bad)
            guard InterfaceFilter.invalidPattern(in: patterns) == nil else { throw bad }
            configuration.interfaces.allow = patterns
        case .interfacesDeny:
            let patterns = try Self.list(value, bad: bad)
            guard InterfaceFilter.invalidPattern(in: patterns) == nil else { throw bad }
            configuration.interfaces.deny = patterns
        case .dnsUpdateDomain:
            guard case .string(let text) = value, text.isEmpty || Self.isDomainName(text) else { throw bad }
            configuration.dnsUpdateDomain = text.isEmpty ? nil : text
        case .dnsUpdateServer:
            // It goes into nsupdate's script: anything but a host or an address could add commands of its own.
            guard case .string(let text) = value, DNSUpdateSettings.parseServer(text) != nil else { throw bad }
            configuration.dnsUpdateServer = text
        case .dnsUpdateKeyFile:
            guard case .string(let path) = value, path.hasPrefix("/") else { throw bad }
            // nsupdate sends the update unsigned when it cannot read the key: check it here, where it can be said.
            guard FileManager.default.isReadableFile(atPath: path) else {
                throw .conflict("bad value for \(key): \(path) (from \(source)) does not exist or cannot be read; nsupdate would send the update unsigned. Give the TSIG key file tsig-keygen wrote")
            }
            if let problem = Self.accessProblem(ofKeyFile: path, check: secretAccessCheck(for: path)) {
                throw .conflict("bad value for \(key): \(path) (from \(source)) \(problem)")
            }
            configuration.dnsUpdateKeyFile = path
        case .dnsUpdateTimeToLive:
            configuration.dnsUpdateTimeToLive = try integer(in: 1...86400)
        case .controlSocket:
            guard case .string(let path) = value, path.hasPrefix("/"), path.utf8.count <= 107 else { throw bad }
            configuration.controlSocket = path
        case .dataDirectory:
            guard case .string(let path) = value, path.hasPrefix("/") else { throw bad }
            configuration.dataDirectory = path
        case .maxFrameSize:
            configuration.maxFrameSize = try integer(in: DaemonConfiguration.maxFrameSizeRange)
        case .maxConnections:
            configuration.maxConnections = try integer(in: DaemonConfiguration.connectionLimitRange)
        case .maxConnectionsPerAddress:
            configuration.maxConnectionsPerAddress = try integer(in: DaemonConfiguration.connectionLimitRange)
        case .maxPendingConnections:
            configuration.maxPendingConnections = try integer(in: DaemonConfiguration.connectionLimitRange)
        case .handshakeTimeout:
            guard let timeout = Self.duration(value), DaemonConfiguration.handshakeTimeoutRange.contains(timeout) else { throw bad }
            configuration.handshakeTimeout = timeout
        case .idleTimeout:
            guard let timeout = Self.duration(value), timeout == .zero || DaemonConfiguration.idleTimeoutRange.contains(timeout) else {
                throw bad
            }
            configuration.idleTimeout = timeout
        case .maxOutboundQueueBytes:
            configuration.maxOutboundQueueBytes = try integer(in: DaemonConfiguration.outboundQueueRange)
        case .diffMaxBytes:
            configuration.diffMaxBytes = try integer(in: DaemonConfiguration.diffMaxBytesRange)
        case .diffTimeLimit:
            guard let limit = Self.duration(value), DaemonConfiguration.diffTimeLimitRange.contains(limit) else { throw bad }
            configuration.diffTimeLimit = limit
        case .memoryBudget:
            let budget = try integer(in: 0...DaemonConfiguration.memoryBudgetRange.upperBound)
            guard budget == 0 || DaemonConfiguration.memoryBudgetRange.contains(budget) else { throw bad }
            configuration.memoryBudget = budget
        case .frameStallTimeout:
            guard let timeout = Self.duration(value), timeout == .zero || DaemonConfiguration.frameStallTimeoutRange.contains(timeout) else {
                throw bad
            }
            configuration.frameStallTimeout = timeout
        case .maxMessagesPerSecond:
            guard let rate = Self.number(value), DaemonConfiguration.messageRateRange.contains(rate) else { throw bad }
            configuration.maxMessagesPerSecond = rate
        case .messageBurst:
            configuration.messageBurst = try integer(in: DaemonConfiguration.messageBurstRange)
        case .logLevel:
            guard case .string(let text) = value, let level = Logger.Level(rawValue: text.lowercased()) else { throw bad }
            configuration.logLevel = level
        case .historyMaxEntries:
            configuration.historyLimits.maxEntries = try integer(in: 1...Int(Int32.max))
        case .historyMaxBytes:
            guard let bytes = Self.integer(value), bytes >= 1 << 20 else { throw bad }
            configuration.historyLimits.maxBytes = Int64(bytes)
        case .actionFilters:
            configuration.actionFilters = try Self.actionFilters(value, bad: bad)
        case .secretFile:
            guard case .string(let path) = value, path.hasPrefix("/") else { throw bad }
            do {
                configuration.sharedSecret = try SharedSecret(contentsOfFile: path, accessCheck: secretAccessCheck(for: path))
            } catch {
                throw .unusableSecret(key: key, source: source, error)
            }
            configuration.secretFile = path
        case .allowOriginalFramingWithoutSecret:
            guard let on = Self.boolean(value) else { throw bad }
            configuration.allowOriginalFramingWithoutSecret = on
        case .webListen:
            configuration.webListen = try Self.listenAddress(value, bad: bad)
        case .otlpListen:
            configuration.otlpListen = try Self.listenAddress(value, bad: bad)
        case .otlpForward:
            guard case .string(let text) = value else { throw bad }
            if text.lowercased() == "off" {
                configuration.otlpForward = nil
            } else {
                guard let url = OTLPForwardHeader.receiverURL(text) else { throw bad }
                configuration.otlpForward = url
            }
        case .otlpForwardHeaders:
            let headers: Result<[OTLPForwardHeader], OTLPForwardHeader.Problem>
            switch value {
            case .string(let text):
                headers = Result { () throws(OTLPForwardHeader.Problem) in try OTLPForwardHeader.parse(text) }
            case .object(let members):
                headers = Result { () throws(OTLPForwardHeader.Problem) in
                    try members.keys.sorted().map { name throws(OTLPForwardHeader.Problem) in
                        guard case .string(let text) = members[name] else { throw .notText(name) }
                        return try OTLPForwardHeader(name: name, value: text)
                    }
                }
            default: throw bad
            }
            do {
                configuration.otlpForwardHeaders = try headers.get()
            } catch {
                // The values may be credentials: the problem names the header, never its value.
                throw .invalidValue(key: key, value: "(values not shown): \(error)", source: source)
            }
        case .webTokenFile:
            guard case .string(let path) = value, path.hasPrefix("/") else { throw bad }
            do {
                // The same rules as the shared secret: owner-only, and enough randomness to be worth checking.
                let secret = try SharedSecret(contentsOfFile: path, accessCheck: secretAccessCheck(for: path))
                configuration.webToken = secret.fileText.trimmingCharacters(in: .whitespacesAndNewlines)
            } catch {
                throw .unusableSecret(key: key, source: source, error)
            }
            configuration.webTokenFile = path
        case .webAssetsDirectory:
            guard case .string(let path) = value, path.hasPrefix("/") else { throw bad }
            configuration.webAssetsDirectory = path
        }
        configuration.sources[key] = source
    }

    /// `HOST:PORT` (port 0: any free port), or nil for `off`.
    private static func listenAddress(_ value: ConfigurationValue, bad: ConfigurationError) throws(ConfigurationError) -> Endpoint? {
        guard case .string(let text) = value else { throw bad }
        if text.lowercased() == "off" { return nil }
        guard let endpoint = Endpoint(text) ?? Self.anyPortEndpoint(text) else { throw bad }
        return endpoint
    }

    /// Named filters from the file's object, or from the environment's JSON text; every name they use must exist.
    private static func actionFilters(
        _ value: ConfigurationValue, bad: ConfigurationError
    ) throws(ConfigurationError) -> [String: ActionTextFilter] {
        let json: Data
        switch value {
        case .object: json = Data(value.jsonText.utf8)
        case .string(let text): json = Data(text.utf8)
        default: throw bad
        }
        guard let filters = try? JSONDecoder().decode([String: ActionTextFilter].self, from: json) else { throw bad }
        do {
            try ActionTextFilter.validate(filters)
        } catch {
            guard case .invalidValue(let key, let given, let source) = bad else { throw bad }
            throw .invalidValue(key: key, value: "\(given): \(error)", source: source)
        }
        return filters
    }

    /// Why the TSIG key file at `path` may not be used, by the rules of a secret file (``SharedSecret/AccessCheck``):
    /// whoever can read it can change the zone. Nil when only its owner (or systemd's credential ACL) has access.
    private static func accessProblem(ofKeyFile path: String, check: SharedSecret.AccessCheck) -> String? {
        var info = stat()
        guard stat(path, &info) == 0 else { return "cannot be examined: \(String(cString: strerror(errno)))" }
        let user = geteuid()
        let (ownerAllowed, forbiddenBits): (Bool, mode_t) =
            switch check {
            case .ownerOnly: (info.st_uid == user, 0o077)
            case .systemdCredential: (info.st_uid == user || info.st_uid == 0, 0o007)
            }
        guard ownerAllowed else {
            return "belongs to uid \(info.st_uid), not to uid \(user) that parleyd runs as; make that user its owner (`chown`) and the only one with access (`chmod 600 \(path)`)"
        }
        guard info.st_mode & forbiddenBits == 0 else {
            let mode = String(info.st_mode & 0o7777, radix: 8)
            return "has mode \(String(repeating: "0", count: max(0, 4 - mode.count)) + mode): its group or others may read the TSIG key, and whoever holds it can change the zone; run `chmod 600 \(path)` (and consider a new key if others may have read it)"
        }
        return nil
    }

    /// A credential systemd passed to this service (`LoadCredential=`) is root-owned with an ACL for the
    /// service's user; anything else must belong to that user alone.
    private func secretAccessCheck(for path: String) -> SharedSecret.AccessCheck {
        guard let directory = environment["CREDENTIALS_DIRECTORY"], directory.hasPrefix("/") else { return .ownerOnly }
        let prefix = directory.hasSuffix("/") ? directory : directory + "/"
        return path.hasPrefix(prefix) && !path.contains("/../") ? .systemdCredential : .ownerOnly
    }

    /// `HOST:0`: the web debugger on any free port (tests), which `Endpoint` does not accept for peers.
    private static func anyPortEndpoint(_ text: String) -> Endpoint? {
        guard text.hasSuffix(":0"), let endpoint = Endpoint(String(text.dropLast()) + "1") else { return nil }
        return Endpoint(host: endpoint.host, port: 0)
    }

    /// A list: a JSON array of strings, or the environment's comma- or space-separated text.
    private static func list(_ value: ConfigurationValue, bad: ConfigurationError) throws(ConfigurationError) -> [String] {
        switch value {
        case .list(let items):
            return try items.map { item throws(ConfigurationError) in
                guard case .string(let text) = item else { throw bad }
                return text
            }
        case .string(let text):
            return text.split(whereSeparator: { $0 == "," || $0 == " " }).map(String.init)
        default:
            throw bad
        }
    }

    /// Letters, digits, hyphens and underscores in dot-separated labels of 1-63 bytes (a final dot allowed).
    static func isDomainName(_ text: String) -> Bool {
        let name = text.hasSuffix(".") ? String(text.dropLast()) : text
        guard !name.isEmpty, name.utf8.count <= 253 else { return false }
        return name.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { label in
            (1...63).contains(label.utf8.count)
                && label.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }
        }
    }

    /// A JSON integer, or text holding one (environment, flags).
    private static func integer(_ value: ConfigurationValue) -> Int? {
        switch value {
        case .integer(let number): number
        case .string(let text): Int(text.trimmingCharacters(in: .whitespaces))
        default: nil
        }
    }

    /// A JSON number, or text holding one.
    private static func number(_ value: ConfigurationValue) -> Double? {
        let number: Double? =
            switch value {
            case .integer(let number): Double(number)
            case .number(let number): number
            case .string(let text): Double(text.trimmingCharacters(in: .whitespaces))
            default: nil
            }
        return number.flatMap { $0.isFinite ? $0 : nil }
    }

    /// Seconds as a JSON number, or text as ``DurationText`` reads it (`500ms`, `90s`, `30m`, `2h`, `1d`).
    static func duration(_ value: ConfigurationValue) -> Duration? {
        guard case .string(let text) = value else { return number(value).map { .seconds($0) } }
        return DurationText.seconds(text).map { .seconds($0) }
    }

    private static func boolean(_ value: ConfigurationValue) -> Bool? {
        switch value {
        case .bool(let on): on
        case .string(let text):
            switch text.lowercased() {
            case "true", "on", "yes", "1": true
            case "false", "off", "no", "0": false
            default: nil
            }
        default: nil
        }
    }

    private static func describe(_ error: any Error) -> String {
        switch error {
        case DecodingError.dataCorrupted(let context): context.underlyingError.map { "\($0)" } ?? context.debugDescription
        case DecodingError.typeMismatch(_, let context): context.debugDescription
        default: "\(error)"
        }
    }
}
