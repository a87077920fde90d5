import Foundation
import Logging
@testable import ParleyDaemon
import ParleyTestSupport
import Testing

@Suite("Configuration reload")
struct ConfigurationReloaderTests {
    @Test("a reload applies the log level at once, names the keys that need a restart, and keeps running on a file that does not load")
    func reload() throws {
        let scratch = try ScratchDirectory()
        let path = try scratch.write("parleyd.json", #"{"logLevel": "info", "port": 7301}"#)
        let options = try CommandLineOptions.parse(["--config", path])
        let first = try ConfigurationLoader(options: options, environment: [:]).load()
        let level = LogLevelControl(first.logLevel)
        let reloader = ConfigurationReloader(
            configuration: first,
            read: { () throws(ConfigurationError) -> DaemonConfiguration in try ConfigurationLoader(options: options, environment: [:]).load() },
            logLevel: level, notifier: SystemdNotifier(environment: [:]),
            logger: Logger(label: "parley.test", factory: { _ in SwiftLogNoOpLogHandler() })
        )

        _ = try scratch.write("parleyd.json", #"{"logLevel": "debug", "port": 7302}"#)
        let (result, running) = try reloader.reloadConfiguration()
        #expect(result.applied == [ConfigurationKey.logLevel.rawValue])
        #expect(result.needRestart == [ConfigurationKey.port.rawValue])
        #expect(level.current == .debug)
        #expect(running.logLevel == .debug)
        // The port is what parleyd listens on until it restarts.
        #expect(running.port == 7301)

        _ = try scratch.write("parleyd.json", "{ not json")
        #expect(throws: ConfigurationError.self) { _ = try reloader.reloadConfiguration() }
        #expect(level.current == .debug)
    }
}
