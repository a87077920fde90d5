import Instrumentation
import Logging
import ParleyRemoteDebugger
import ParleyTelemetry

/// A swift-log `LogHandler` that sends every record at or above its level to parleyd, where it appears on the
/// app's timeline beside its states.
///
/// ```swift
/// import ParleyAvahi
/// LoggingSystem.bootstrap { ParleyLogHandler(label: $0, appName: "Listr", debugger: .discover(backend: .avahi), level: .info) }
///
/// // Keeping the app's own output too:
/// LoggingSystem.bootstrap { label in
///     MultiplexLogHandler([StreamLogHandler.standardError(label: label), ParleyLogHandler(label: label, appName: "Listr", debugger: .discover(backend: .avahi))])
/// }
/// ```
///
/// A call never waits for the network: the handler builds a ``LogRecord`` — the time, the level, the logger's
/// label, the message, the handler's, the metadata provider's and the call's metadata (in that order, later
/// ones winning), the error if the call gave one (`error.type`, `error.message`), the source, file, function
/// and line, and the trace and span of the `ParleyTracer` span current in the task — and hands it to a
/// ``TelemetryExporter``, whose bounded queue keeps the newest records and counts what it drops. The values of
/// secret-looking keys (``SecretRedaction``) are hidden before the record leaves the app, by the exporter's task. A record below ``logLevel`` never reaches the handler: `Logger`
/// compares the level first, and the handler's level is a stored property.
public struct ParleyLogHandler: LogHandler {
    public var logLevel: Logger.Level
    public var metadataProvider: Logger.MetadataProvider?
    public var metadata: Logger.Metadata {
        didSet { convertedMetadata = Self.convert(metadata) }
    }

    public let label: String
    /// Where the records go; nil for the exporter's own logger, whose lines are never exported.
    public let exporter: TelemetryExporter?
    public let redaction: SecretRedaction
    /// ``metadata`` converted once when it changes, not at every call.
    private var convertedMetadata: TelemetryAttributes = [:]

    /// A handler sending through the process's exporter for `appName` and `debugger`
    /// (``TelemetryExporter/shared(appName:debugger:trust:)``), made and started the first time it is asked for.
    public init(
        label: String, appName: String, debugger: DebuggerLocation, trust: DebuggerTrust = .paired, level: Logger.Level = .info,
        redaction: SecretRedaction = SecretRedaction(), metadataProvider: Logger.MetadataProvider? = LoggingSystem.metadataProvider
    ) {
        // The exporter's own diagnostics would otherwise be sent by the exporter they are about (and asking for
        // the exporter while it is being made would make another).
        let exporter = Self.isExportersOwn(label) ? nil : TelemetryExporter.shared(appName: appName, debugger: debugger, trust: trust)
        self.init(label: label, exporter: exporter, level: level, redaction: redaction, metadataProvider: metadataProvider)
    }

    /// A handler sending through `exporter` (one shared with a `RemoteDebugger`, or configured by the app). The
    /// exporter is the app's to start and stop.
    public init(
        label: String, exporter: TelemetryExporter?, level: Logger.Level = .info, redaction: SecretRedaction = SecretRedaction(),
        metadataProvider: Logger.MetadataProvider? = LoggingSystem.metadataProvider
    ) {
        self.label = label
        self.exporter = Self.isExportersOwn(label) ? nil : exporter
        self.logLevel = level
        self.redaction = redaction
        self.metadataProvider = metadataProvider
        self.metadata = [:]
    }

    private static func isExportersOwn(_ label: String) -> Bool {
        label == TelemetryExporter.loggerLabel || label.hasPrefix(TelemetryExporter.loggerLabel + ".")
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        guard let exporter else { return }
        // Redacted by the exporter's task before it leaves: matching keys against the words is the costliest step.
        exporter.enqueue(record(for: event), redacting: redaction)
    }

    /// The record `event` becomes (not yet redacted).
    func record(for event: LogEvent) -> LogRecord {
        var attributes = convertedMetadata
        if let provided = metadataProvider?.get(), !provided.isEmpty {
            attributes.merge(Self.convert(provided)) { _, provided in provided }
        }
        if let explicit = event.metadata, !explicit.isEmpty {
            // Most calls give metadata and nothing else does: taken as it is, not merged key by key.
            if attributes.isEmpty {
                attributes = Self.convert(explicit)
            } else {
                attributes.merge(Self.convert(explicit)) { _, explicit in explicit }
            }
        }
        if let error = event.error {
            attributes["error.type"] = .string(String(reflecting: type(of: error)))
            attributes["error.message"] = .string("\(error)")
        }
        // A span extracted from a request is the caller's: a line is tied only to a span of this process.
        let span = ServiceContext.current?.parleyTraceContext.flatMap { $0.isRemote ? nil : $0 }
        return LogRecord(
            time: .now, severity: LogSeverity(event.level), label: label, message: event.message.description, metadata: attributes,
            source: event.source, file: event.file, function: event.function, line: event.line, traceID: span?.traceID, spanID: span?.spanID
        )
    }

    // MARK: - Metadata

    /// swift-log metadata as telemetry attributes. Strings stay strings; a `stringConvertible` that is a number
    /// or a boolean keeps its type (so parleyd can compare it), anything else becomes its description; arrays and
    /// dictionaries nest, down to ``TelemetryLimits/maximumDepth`` levels, below which a value is "…" (as the
    /// limits would make it anyway), so that hostile nesting costs no deep recursion here.
    package static func convert(_ metadata: Logger.Metadata, depth: Int = 0) -> TelemetryAttributes {
        var attributes = TelemetryAttributes(minimumCapacity: metadata.count)
        for (key, value) in metadata {
            attributes[key] = convert(value, depth: depth)
        }
        return attributes
    }

    package static func convert(_ value: Logger.MetadataValue, depth: Int) -> TelemetryValue {
        switch value {
        case .string(let text):
            return .string(text)
        case .stringConvertible(let convertible):
            return TelemetryValue(typing: convertible)
        case .array(let values):
            guard depth < TelemetryLimits.default.maximumDepth else { return .string("…") }
            return .array(values.map { convert($0, depth: depth + 1) })
        case .dictionary(let values):
            guard depth < TelemetryLimits.default.maximumDepth else { return .string("…") }
            return .map(convert(values, depth: depth + 1))
        }
    }
}

extension LogSeverity {
    /// The severity of a swift-log level: the same seven names.
    public init(_ level: Logger.Level) {
        switch level {
        case .trace: self = .trace
        case .debug: self = .debug
        case .info: self = .info
        case .notice: self = .notice
        case .warning: self = .warning
        case .error: self = .error
        case .critical: self = .critical
        }
    }
}
