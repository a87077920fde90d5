import ArgumentParser
import CMallocTuning
import Foundation
import Logging
import NIOCore
import Parley
import ParleyCommandLine
import ServiceLifecycle

/// parleyd's entry point, kept out of `main.swift` so that it can be read and tested as a library.
public enum Parleyd {
    /// parleyd's version, reported by `parleyctl status`.
    public static let version = ParleyRelease.version

    /// Exit statuses.
    public enum Status {
        public static let ok: Int32 = 0
        public static let failure: Int32 = 1
        public static let configuration: Int32 = 2
    }

    /// The event loops parleyd's connections (and its HTTP servers) run on: one, unless the operator sets NIO's
    /// `NIO_SINGLETON_GROUP_LOOP_COUNT`. parleyd mostly moves messages from one connection to another, and a
    /// connection's frames can be written only on its own loop: with a loop per core, a message from a client on
    /// one loop to a peer on another wakes that loop's thread, and a reply wakes the first one again. On one loop
    /// the forwarding writes at once. Measured on two cores (docs/performance.md, "Against a broker"): a request
    /// through parleyd p50 −20 %, the throughput rows and the stored log records within their spread. A machine
    /// with many busy peers may want more loops for fan-out; that is what the variable is for.
    static func chooseEventLoops(environment: [String: String]) {
        guard environment["NIO_SINGLETON_GROUP_LOOP_COUNT"] == nil else { return }
        NIOSingletons.groupLoopCountSuggestion = 1
    }

    /// Parses the command line, loads the configuration, sets up logging and runs the daemon until SIGTERM or
    /// SIGINT. Returns the exit status.
    public static func main(arguments: [String], environment: [String: String]) async -> Int32 {
        // Everything parleyd creates is its user's alone: the history (apps' states and screenshots) and, until it
        // is deliberately opened to the group with chmod, the control socket, which would otherwise be reachable
        // by others for an instant between bind and chmod under a lax umask.
        umask(0o077)
        chooseEventLoops(environment: environment)
        // A fixed mmap threshold: buffers of 128 KiB and more (large frames, and the growing buffers of frames
        // still arriving) get pages of their own, returned to the system when freed. glibc's default raises the
        // threshold after each such free, after which big buffers come from the heap and stay resident when freed:
        // with the memory budget full of slow frames that made parleyd's peak 815 MiB against a 256 MiB budget. At
        // 1 MiB the peak was 343–404 MiB over eight runs (buffers between 128 KiB and 1 MiB, freed into the heap,
        // stayed resident); at 128 KiB, 330–333 MiB in four (scripts/measure-attacks 1 3).
        _ = parley_set_mmap_threshold(128 << 10)
        let options: CommandLineOptions
        do {
            options = try CommandLineOptions.parse(arguments)
        } catch {
            let code = CommandLineOptions.exitCode(for: error)
            if code == .success {  // --help
                print(CommandLineOptions.fullMessage(for: error))
                return Status.ok
            }
            DaemonLogHandler.writeEarly(.error, "usage error: \(CommandLineOptions.message(for: error))", environment: environment)
            DaemonLogHandler.writeEarly(.error, "see parleyd --help", environment: environment)
            return Status.configuration
        }

        let loader = ConfigurationLoader(options: options, environment: environment)
        let configuration: DaemonConfiguration
        do {
            configuration = try loader.load()
        } catch {
            DaemonLogHandler.writeEarly(.error, "configuration error: \(error)", environment: environment)
            return Status.configuration
        }

        let format = DaemonLogHandler.format(environment: environment)
        let control = LogLevelControl(configuration.logLevel)
        LoggingSystem.bootstrap { label in DaemonLogHandler(label: label, format: format, control: control) }
        let logger = Logger(label: "parleyd")
        logger.info(
            "configuration loaded",
            metadata: Dictionary(
                uniqueKeysWithValues: ConfigurationKey.allCases.map { key in
                    (key.rawValue, "\(configuration.valueDescription(key)) (\(configuration.sources[key]?.shortName ?? "default"))")
                }
            )
        )
        let unknown = loader.unknownEnvironmentVariables
        if !unknown.isEmpty {
            logger.warning(
                "ignoring environment variables that name no setting of parleyd: \(unknown.joined(separator: ", ")); if one was meant for parleyd, see the keys in docs/operations.md (PARLEY_ and the key in upper snake case)"
            )
        }

        let service = DaemonService(
            configuration: configuration,
            logger: logger,
            logLevel: control,
            notifier: SystemdNotifier(environment: environment),
            reload: { () throws(ConfigurationError) -> DaemonConfiguration in
                // The environment and flags are those of this process; what can change is the file.
                try ConfigurationLoader(options: options, environment: environment).load()
            }
        )
        do {
            try await service.run()
            return Status.ok
        } catch let held as DataDirectoryLock.Held {
            // Another instance is in the way: one line saying which (its pid) and what to do, nothing else.
            logger.critical("parleyd cannot start: \(held)")
            return Status.failure
        } catch TransceiverError.controlSocket(let problem) {
            logger.critical("parleyd cannot start: \(problem.descriptionNamingOptions)")
            return Status.failure
        } catch {
            logger.critical("parleyd failed", metadata: ["error": "\(error)"])
            return Status.failure
        }
    }
}
