import ArgumentParser
import Logging
import ParleyRemoteDebugger

/// Logs one line at each of swift-log's seven levels, with metadata holding secrets, through a handler at
/// `--level`; then exits (having flushed).
struct LogLevels: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "log-levels", abstract: "Log one line at every level.")

    @OptionGroup var telemetry: TelemetryOptions

    @Option(help: "The handler's level.")
    var level: Logger.Level = .notice

    func run() async throws {
        telemetry.bootstrap(defaultName: "traced-levels", level: level)
        let logger = Logger(label: "traced.levels")
        for level in Logger.Level.allCases {
            logger.log(
                level: level, "\(level) line",
                metadata: ["user": "ana", "password": "hunter2", "request": ["Authorization": "Bearer abc", "path": "/items"]]
            )
        }
        await TelemetryExporter.stopShared()
    }
}
