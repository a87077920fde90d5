import ArgumentParser
import Logging
import ParleyLogging
import ParleyRemoteDebugger
import ParleyTracing
import Tracing

extension TelemetryOptions {
    /// The two bootstrap lines: log lines at `level` and above, and every span, to parleyd (the log lines to
    /// standard error as well). Sent to the parleyd at the address given, paired or not: the tests that run this
    /// tool start that parleyd themselves.
    func bootstrap(defaultName: String, level: Logger.Level) {
        let appName = appName ?? defaultName
        let location = DebuggerLocation.endpoint(host: debugger.host, port: debugger.port)
        LoggingSystem.bootstrap { label in
            var standardError = StreamLogHandler.standardError(label: label)
            standardError.logLevel = level
            return MultiplexLogHandler([standardError, ParleyLogHandler(label: label, appName: appName, debugger: location, trust: .anyOpen, level: level)])
        }
        InstrumentationSystem.bootstrap(ParleyTracer(appName: appName, debugger: location, trust: .anyOpen))
    }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}
