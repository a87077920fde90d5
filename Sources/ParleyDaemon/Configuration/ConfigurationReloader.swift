import Foundation
import Logging
import Parley
import ParleyControl
import Synchronization
import UnixSignals

/// SIGHUP and `parleyctl reload` (`parley.control.Reload`): re-reads the configuration, one reload at a time. The
/// log level changes at once, as do the debugger's history settings; any other changed key is named in the log as
/// needing a restart (the transceiver's settings are fixed while it runs). A configuration that does not load is
/// logged and thrown: the daemon keeps running as it was.
final class ConfigurationReloader: Sendable {
    /// The configuration parleyd runs with, as reloads change it; held for the whole of a reload.
    private let current: Mutex<DaemonConfiguration>
    /// Reads the configuration again: files, so it runs on the blocking pool.
    private let read: @Sendable () throws(ConfigurationError) -> DaemonConfiguration
    private let logLevel: LogLevelControl
    private let notifier: SystemdNotifier
    private let logger: Logger

    init(
        configuration: DaemonConfiguration, read: @escaping @Sendable () throws(ConfigurationError) -> DaemonConfiguration,
        logLevel: LogLevelControl, notifier: SystemdNotifier, logger: Logger
    ) {
        current = Mutex(configuration)
        self.read = read
        self.logLevel = logLevel
        self.notifier = notifier
        self.logger = logger
    }

    /// Reloads on each SIGHUP; a configuration that does not load is logged and ignored.
    func reloadOnHangup(_ hangups: UnixSignalsSequence, debugger: DebuggerService) async {
        for await _ in hangups {
            _ = try? await reload(debugger: debugger)
        }
    }

    /// Reloads, applies what can change while parleyd runs, and returns what was applied and what needs a restart.
    func reload(debugger: DebuggerService) async throws -> Control.ReloadResult {
        // The file is read, and the lock held, on the blocking pool: a control request is handled on an event loop.
        let (result, configuration) = try await BlockingPool.shared.run { try self.reloadConfiguration() }
        if !ConfigurationKey.historySettings.isDisjoint(with: result.applied.compactMap(ConfigurationKey.init(rawValue:))) {
            do {
                try await debugger.apply(filters: configuration.actionFilters, limits: configuration.historyLimits)
                logger.notice("debugger history settings changed", metadata: ["history-limits": "\(configuration.historyLimits)"])
            } catch {
                logger.error("cannot apply the new history limits", metadata: ["reason": "\(error)"])
                throw error
            }
        }
        return result
    }

    /// The blocking part of a reload, under the lock: returns what changed and the configuration now running.
    func reloadConfiguration() throws -> (Control.ReloadResult, DaemonConfiguration) {
        try current.withLock { current in
            notifier.notify("RELOADING=1\nMONOTONIC_USEC=\(Self.monotonicMicroseconds())", logger: logger)
            defer { notifier.notify("READY=1", logger: logger) }
            let next: DaemonConfiguration
            do {
                next = try read()
            } catch {
                logger.error("reload failed; keeping the running configuration", metadata: ["reason": "\(error)"])
                throw error
            }
            let changed = next.changedKeys(from: current)
            if changed.isEmpty {
                logger.notice("configuration reloaded; nothing changed")
                return (Control.ReloadResult(applied: [], needRestart: []), current)
            }
            var applied: [String] = []
            if changed.contains(.logLevel) {
                logLevel.current = next.logLevel
                current.logLevel = next.logLevel
                applied.append(ConfigurationKey.logLevel.rawValue)
                logger.notice("log level changed", metadata: ["log-level": "\(next.logLevel)"])
            }
            for key in changed where ConfigurationKey.historySettings.contains(key) {
                applied.append(key.rawValue)
            }
            current.historyLimits = next.historyLimits
            current.actionFilters = next.actionFilters
            let pending = changed.filter(\.needsRestart)
            if !pending.isEmpty {
                logger.warning(
                    "configuration changed; restart parleyd to apply",
                    metadata: [
                        "keys": "\(pending.map(\.rawValue).joined(separator: ","))",
                        "new-values": "\(pending.map { "\($0)=\(next.valueDescription($0))" }.joined(separator: " "))",
                    ]
                )
            }
            return (Control.ReloadResult(applied: applied, needRestart: pending.map(\.rawValue)), current)
        }
    }

    private static func monotonicMicroseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1_000
    }
}
