import Logging
import NIOCore
import NIOPosix
import Parley
import ParleyTelemetry

/// How a ``TelemetryExporter`` behaves. `.init(appName:debugger:)` is all most apps need.
public struct TelemetryExporterConfiguration: Sendable {
    /// Where the records go.
    public enum Destination: Sendable, CustomStringConvertible {
        /// A connection of the exporter's own to the debugger found there (discovered, or a known address), made
        /// exactly as `RemoteDebugger` makes its own: it dials out only, and reconnects with backoff.
        case debugger(DebuggerLocation)
        /// A transceiver the app already runs (a `RemoteDebugger`'s, or its own): records go to the peers it is
        /// connected to whose hello accepts `parley.telemetry.Batch`. The exporter neither starts nor stops it.
        case transceiver(Transceiver)

        public var description: String {
            switch self {
            case .debugger(let location): "\(location)"
            case .transceiver(let transceiver): "the peers of transceiver \(transceiver.configuration.name)"
            }
        }
    }

    /// The app's name: what parleyd shows, and (with ``identity`` left nil) the key of its stable peer id. Unused
    /// with `.transceiver`, which has a name of its own.
    public var appName: String
    public var destination: Destination
    /// How many records (log lines and spans) may wait. When the queue is full the oldest waiting record is
    /// dropped and counted, so that the newest reach the debugger and memory stays bounded. At least 1.
    public var queueCapacity: Int
    /// The most records in one `parley.telemetry.Batch` (1 to ``TelemetryLimits/maximumBatchRecords``).
    public var maximumBatchRecords: Int
    /// The most bytes of one batch's JSON; a larger one is sent in halves. A single record larger than parleyd's
    /// ``TelemetryLimits/maximumBatchBytes`` once cut to the limits is counted as failed and not sent.
    public var maximumBatchBytes: Int
    /// What records are cut to before they leave (parleyd cuts again what arrives).
    public var limits: TelemetryLimits
    /// The peer id of the exporter's own connection (`.debugger` only). nil: persisted per app name, as for any
    /// transceiver; a second transceiver of the same name in the same process (a `RemoteDebugger`'s) takes the
    /// next id, and so is a second session in parleyd — share its transceiver to see both in one.
    public var identity: TransceiverConfiguration.Identity?
    /// The shared secret of a parleyd that requires one (`.debugger` only).
    public var sharedSecret: SharedSecret?
    /// Which debuggers the exporter's own connection sends to (`.debugger` only), as
    /// ``RemoteDebuggerConfiguration/trust``: ``DebuggerTrust/paired`` unless set. A `RemoteDebugger` of the same
    /// app name keeps the same device identity in the same directory, so one pairing serves both.
    public var trust: DebuggerTrust
    /// Where the device identity and the paired debuggers are kept, as ``RemoteDebuggerConfiguration/deviceDirectory``.
    public var deviceDirectory: String?
    /// On ``TelemetryExporter/stop()``, how long records still queued get to reach a debugger (connecting first,
    /// if none is connected yet).
    public var flushTimeout: Duration
    /// A debugger whose connection takes nothing for this long fails the batch being sent to it (counted), so
    /// that a stalled debugger holds up neither the others nor `stop()`.
    public var stallTimeout: Duration
    /// The exporter's own diagnostics (and its connection's). Lines under the label ``TelemetryExporter/loggerLabel``
    /// are never exported: `ParleyLogHandler` leaves them out, so that a failing send cannot feed itself.
    public var logger: Logger
    /// The event loops of the exporter's own connection (`.debugger` only), as
    /// ``TransceiverConfiguration/eventLoopGroup``: NIO's shared socket loops by default; on an Apple platform a
    /// `NIOTSEventLoopGroup` runs it on Network.framework (docs/apple.md).
    public var eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton

    public init(
        appName: String,
        destination: Destination,
        queueCapacity: Int = 10_000,
        maximumBatchRecords: Int = 512,
        maximumBatchBytes: Int = 1 << 20,
        limits: TelemetryLimits = .default,
        identity: TransceiverConfiguration.Identity? = nil,
        sharedSecret: SharedSecret? = nil,
        trust: DebuggerTrust = .paired,
        deviceDirectory: String? = nil,
        flushTimeout: Duration = .seconds(2),
        stallTimeout: Duration = .seconds(5),
        logger: Logger = Logger(label: TelemetryExporter.loggerLabel)
    ) {
        self.trust = trust
        self.deviceDirectory = deviceDirectory
        self.appName = appName
        self.destination = destination
        self.queueCapacity = queueCapacity
        self.maximumBatchRecords = maximumBatchRecords
        self.maximumBatchBytes = maximumBatchBytes
        self.limits = limits
        self.identity = identity
        self.sharedSecret = sharedSecret
        self.flushTimeout = flushTimeout
        self.stallTimeout = stallTimeout
        self.logger = logger
    }

    /// Records for the debugger at `debugger`, over a connection of the exporter's own.
    public init(appName: String, debugger: DebuggerLocation) {
        self.init(appName: appName, destination: .debugger(debugger))
    }

    /// Checks what `init` cannot.
    func validate() throws(TelemetryExporterError) {
        guard queueCapacity >= 1 else { throw .invalidSetting("queueCapacity", "\(queueCapacity)", "it must be at least 1") }
        guard (1...limits.maximumBatchRecords).contains(maximumBatchRecords) else {
            throw .invalidSetting("maximumBatchRecords", "\(maximumBatchRecords)", "it must be from 1 to \(limits.maximumBatchRecords), parleyd's limit")
        }
        guard (1024...limits.maximumBatchBytes).contains(maximumBatchBytes) else {
            throw .invalidSetting("maximumBatchBytes", "\(maximumBatchBytes)", "it must be from 1024 to \(limits.maximumBatchBytes), parleyd's limit")
        }
        if case .debugger(.discover(_, let type)) = destination {
            do {
                _ = try ServiceType(type)
            } catch {
                throw .invalidSetting("service type", type, error.description)
            }
        }
    }
}

/// What a ``TelemetryExporter`` refuses. Sending failures are logged and counted, never thrown at the app.
public enum TelemetryExporterError: Error, Sendable, Hashable, CustomStringConvertible {
    /// `start()` or `run()` was called on an exporter that has already run.
    case alreadyStarted
    /// A setting of the configuration is out of range: its name, its value, and the rule.
    case invalidSetting(String, String, String)
    /// A trust other than `.anyOpen` needs the app's device identity, which cannot be read or made.
    case deviceIdentity(DeviceIdentityError)

    public var description: String {
        switch self {
        case .alreadyStarted:
            "this telemetry exporter has already been started; an exporter runs once, create a new one to start again"
        case .invalidSetting(let name, let value, let rule):
            "the telemetry exporter's \(name) \(value) is invalid: \(rule)"
        case .deviceIdentity(let error):
            "the telemetry exporter cannot send to paired debuggers: \(error)"
        }
    }
}

/// What a ``TelemetryExporter`` did with the records it was given. Every record ends up in exactly one of
/// `dropped`, `sent`, `failed`, or is still waiting (``TelemetryExporter/pendingCount``).
public struct TelemetryExporterStatistics: Sendable, Hashable {
    /// Records that never left: pushed out of the full queue by newer ones, given after `stop()`, or still
    /// queued when the exporter stopped.
    public var dropped = 0
    /// Records handed to at least one debugger's connection.
    public var sent = 0
    /// Records taken from the queue that reached no debugger: the connection failed or stalled, or the record
    /// was too large even alone.
    public var failed = 0
    /// `parley.telemetry.Batch` messages sent (to one debugger or more).
    public var batches = 0

    public init() {}
}
