import Foundation
import Parley
@testable import ParleyDaemon
import ParleyTestSupport
import ParleyWire
import Testing

/// The connection limits in parleyd's configuration: defaults, every layer's spelling, what 0 means,
/// bad values, and (with the real binary) that a configured limit reaches the transceiver.
@Suite("parleyd limits configuration")
struct LimitsConfigurationTests {
    /// Loads `file` as the config file, under `environment` and `flags`.
    func load(file: String = "{}", environment: [String: String] = [:], flags: [String] = []) throws -> DaemonConfiguration {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("parleyd-limits-\(UUID().uuidString).json")
        try Data(file.utf8).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        let options = try CommandLineOptions.parse(flags + ["--config", url.path])
        return try ConfigurationLoader(options: options, environment: environment).load()
    }

    @Test("the defaults: 256 connections, 256 pending (a pool of their own), 16 per address, 5 s handshake, 30 min idle, 8 MiB queue, 1000 frames/s burst 2000")
    func defaults() throws {
        let configuration = try load()
        let transceiver = configuration.transceiverConfiguration(logger: .init(label: "test"))
        #expect(transceiver.maximumConnections == 256)
        #expect(transceiver.maximumPendingConnections == 256)
        #expect(transceiver.maximumConnectionsPerAddress == 16)
        #expect(transceiver.handshakeTimeout == .seconds(5))
        #expect(transceiver.idleTimeout == .seconds(1800))
        #expect(transceiver.outboundHighWatermark == 8 * 1024 * 1024)
        #expect(transceiver.outboundLowWatermark == 2 * 1024 * 1024)
        #expect(transceiver.messageRateLimit == MessageRateLimit(perSecond: 1000, burst: 2000))
        #expect(transceiver.maximumFrameSize == 64 * 1024 * 1024)
    }

    @Test("each key is read from the file, the environment and the flags, and reaches the transceiver")
    func layers() throws {
        let file = try load(
            file: #"""
                {"maxConnections": 10, "maxConnectionsPerAddress": 3, "handshakeTimeout": 0.5, "idleTimeout": "2h",
                 "maxOutboundQueueBytes": 1048576, "maxMessagesPerSecond": 12.5, "messageBurst": 40, "maxFrameSize": 4096}
                """#
        ).transceiverConfiguration(logger: .init(label: "test"))
        #expect(file.maximumConnections == 10)
        #expect(file.maximumConnectionsPerAddress == 3)
        #expect(file.handshakeTimeout == .milliseconds(500))
        #expect(file.idleTimeout == .seconds(7200))
        #expect(file.outboundHighWatermark == 1_048_576 && file.outboundLowWatermark == 262_144)
        #expect(file.messageRateLimit == MessageRateLimit(perSecond: 12.5, burst: 40))
        #expect(file.maximumFrameSize == 4096)

        let environment = try load(environment: [
            "PARLEY_MAX_CONNECTIONS": "11", "PARLEY_MAX_CONNECTIONS_PER_ADDRESS": "4", "PARLEY_HANDSHAKE_TIMEOUT": "2500ms",
            "PARLEY_IDLE_TIMEOUT": "90s", "PARLEY_MAX_OUTBOUND_QUEUE_BYTES": "65536", "PARLEY_MAX_MESSAGES_PER_SECOND": "50",
            "PARLEY_MESSAGE_BURST": "5",
        ]).transceiverConfiguration(logger: .init(label: "test"))
        #expect(environment.maximumConnections == 11)
        #expect(environment.maximumConnectionsPerAddress == 4)
        #expect(environment.handshakeTimeout == .milliseconds(2500))
        #expect(environment.idleTimeout == .seconds(90))
        #expect(environment.outboundHighWatermark == 65536)
        #expect(environment.messageRateLimit == MessageRateLimit(perSecond: 50, burst: 5))

        let flags = try load(flags: [
            "--max-connections", "12", "--max-connections-per-address", "5", "--handshake-timeout", "1m", "--idle-timeout", "1d",
            "--max-outbound-queue-bytes", "131072", "--max-messages-per-second", "7", "--message-burst", "9",
        ]).transceiverConfiguration(logger: .init(label: "test"))
        #expect(flags.maximumConnections == 12)
        #expect(flags.maximumConnectionsPerAddress == 5)
        #expect(flags.handshakeTimeout == .seconds(60))
        #expect(flags.idleTimeout == .seconds(86400))
        #expect(flags.outboundHighWatermark == 131_072)
        #expect(flags.messageRateLimit == MessageRateLimit(perSecond: 7, burst: 9))
    }

    @Test("0 turns the connection limits, the idle timeout and the rate limit off")
    func zeroIsOff() throws {
        let transceiver = try load(
            file: #"{"maxConnections": 0, "maxConnectionsPerAddress": 0, "idleTimeout": 0, "maxMessagesPerSecond": 0}"#
        ).transceiverConfiguration(logger: .init(label: "test"))
        #expect(transceiver.maximumConnections == nil)
        #expect(transceiver.maximumConnectionsPerAddress == nil)
        #expect(transceiver.idleTimeout == nil)
        #expect(transceiver.messageRateLimit == nil)
    }

    @Test("a bad value is refused, naming the key, the value and what is allowed", arguments: [
        ("maxConnections", #"-1"#, "-1", "0 to 65536"),
        ("maxConnections", #""many""#, #""many""#, "0 to 65536"),
        ("maxConnectionsPerAddress", #"70000"#, "70000", "0 to 65536"),
        ("handshakeTimeout", #"0"#, "0", "0.1 s to 600 s"),
        ("handshakeTimeout", #""5 parsecs""#, #""5 parsecs""#, "0.1 s to 600 s"),
        ("handshakeTimeout", #""1h""#, #""1h""#, "0.1 s to 600 s"),
        ("idleTimeout", #""0.5s""#, #""0.5s""#, "0 (off) or a duration from 1 s to 30 days"),
        ("idleTimeout", #""-5m""#, #""-5m""#, "0 (off) or a duration from 1 s to 30 days"),
        ("idleTimeout", #"true"#, "true", "0 (off) or a duration from 1 s to 30 days"),
        ("maxOutboundQueueBytes", #"1000"#, "1000", "65536 to 1073741824"),
        ("maxMessagesPerSecond", #""fast""#, #""fast""#, "0 to 1000000"),
        ("maxMessagesPerSecond", #"-3"#, "-3", "0 to 1000000"),
        ("messageBurst", #"0"#, "0", "1 to 1000000"),
    ])
    func badValue(key: String, json: String, shown: String, allowed: String) throws {
        do {
            _ = try load(file: #"{"\#(key)": \#(json)}"#)
            Issue.record("\(key)=\(json) was accepted")
        } catch let error as ConfigurationError {
            guard case .invalidValue(let badKey, let value, _) = error else {
                Issue.record("unexpected error \(error)")
                return
            }
            #expect(badKey.rawValue == key)
            #expect(value == shown)
            #expect(error.description.contains("bad value for \(key): \(shown)"), "\(error)")
            #expect(error.description.contains(allowed), "\(error)")
        }
    }

    @Test("the same check applies to the environment and the flags, which name their variable and flag")
    func badValueSources() throws {
        #expect(throws: ConfigurationError.invalidValue(
            key: .idleTimeout, value: #""soon""#, source: .environment("PARLEY_IDLE_TIMEOUT")
        )) { try load(environment: ["PARLEY_IDLE_TIMEOUT": "soon"]) }
        #expect(throws: ConfigurationError.invalidValue(
            key: .messageBurst, value: #""-1""#, source: .commandLine("--message-burst")
        )) { try load(flags: ["--message-burst=-1"]) }
    }

    @Test("parleyd applies a configured limit: a second connection from one address is refused with too-many-connections")
    func daemonAppliesLimit() async throws {
        let scratch = try ScratchDirectory()
        let config = try scratch.write("parleyd.json", #"{"port": 0, "maxConnectionsPerAddress": 1}"#)
        let daemon = try ParleydProcess(arguments: ["--no-discovery"], environment: scratch.parleydEnvironment(config: config), directory: scratch)
        defer { daemon.kill() }
        let port = try await daemon.waitUntilReady().port
        let first = Transceiver(configuration: TransceiverConfiguration(name: "first", identity: .ephemeral, listenHost: nil))
        let second = Transceiver(configuration: TransceiverConfiguration(name: "second", identity: .ephemeral, listenHost: nil))
        try await first.start()
        try await second.start()
        do {
            try await first.connect(to: Endpoint(host: "127.0.0.1", port: port))
            try await second.connect(to: Endpoint(host: "127.0.0.1", port: port))
            Issue.record("the second connection from 127.0.0.1 was accepted")
        } catch TransceiverError.handshakeFailed(_, .refusedByPeer(let code, let message)) {
            #expect(code == .tooManyConnections)
            #expect(message.contains("at most 1 per address"), "\(message)")
        }
        await first.stop()
        await second.stop()
        let line = try await daemon.waitForLine(containing: "connection refused")
        #expect(line.contains("maximumConnectionsPerAddress=1"), "\(line)")
        #expect(line.contains("address=127.0.0.1"), "\(line)")
        daemon.signal(SIGTERM)
        #expect(await daemon.waitForExit(timeout: .seconds(5)) == 0)
    }

    @Test("parleyd refuses to start on a bad limit, with status 2 and the reason")
    func daemonRefusesBadLimit() async throws {
        let scratch = try ScratchDirectory()
        let config = try scratch.write("parleyd.json", #"{"port": 0}"#)
        let daemon = try ParleydProcess(
            arguments: ["--no-discovery", "--idle-timeout", "forever"], environment: scratch.parleydEnvironment(config: config), directory: scratch
        )
        defer { daemon.kill() }
        #expect(await daemon.waitForExit(timeout: .seconds(10)) == 2)
        #expect(daemon.log.contains(#"bad value for idleTimeout: "forever" (from command-line flag --idle-timeout)"#), "\(daemon.log)")
    }
}
