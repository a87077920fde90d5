import ParleyJSON

/// How severe a log record is: swift-log's seven levels, with OpenTelemetry's severity numbers so that a record
/// from another language maps onto the same scale.
public enum LogSeverity: String, Sendable, Hashable, Codable, CaseIterable, Comparable {
    case trace, debug, info, notice, warning, error, critical

    /// OpenTelemetry's `SeverityNumber`: TRACE 1, DEBUG 5, INFO 9, INFO2 10, WARN 13, ERROR 17, FATAL 21.
    public var number: Int {
        switch self {
        case .trace: 1
        case .debug: 5
        case .info: 9
        case .notice: 10
        case .warning: 13
        case .error: 17
        case .critical: 21
        }
    }

    /// The level of an OpenTelemetry severity number (1–24; each range of four is one level, and INFO2–INFO4 are
    /// notices); nil outside 1–24.
    public init?(number: Int) {
        switch number {
        case 1...4: self = .trace
        case 5...8: self = .debug
        case 9: self = .info
        case 10...12: self = .notice
        case 13...16: self = .warning
        case 17...20: self = .error
        case 21...24: self = .critical
        default: return nil
        }
    }

    public static func < (lhs: LogSeverity, rhs: LogSeverity) -> Bool { lhs.number < rhs.number }
}

/// One log line an app wrote, in the shape of an OpenTelemetry log record (`LogRecord` of the logs data model)
/// with swift-log's fields: `label` is the logger's label (OpenTelemetry's instrumentation scope), `source` the
/// module, `file`/`function`/`line` where the call is (`code.*` attributes there).
///
/// `traceID` and `spanID` tie the line to the span that was current when it was written.
public struct LogRecord: Sendable, Hashable, Codable {
    public var time: UnixNanos
    public var severity: LogSeverity
    public var label: String
    public var message: String
    public var metadata: TelemetryAttributes
    public var source: String
    public var file: String
    public var function: String
    public var line: UInt
    public var traceID: TraceID?
    public var spanID: SpanID?
    /// Metadata entries dropped on the way (past the limits), by the app or by parleyd.
    public var droppedMetadata: Int

    public init(
        time: UnixNanos, severity: LogSeverity, label: String, message: String, metadata: TelemetryAttributes = [:], source: String = "",
        file: String = "", function: String = "", line: UInt = 0, traceID: TraceID? = nil, spanID: SpanID? = nil, droppedMetadata: Int = 0
    ) {
        self.time = time
        self.severity = severity
        self.label = label
        self.message = message
        self.metadata = metadata
        self.source = source
        self.file = file
        self.function = function
        self.line = line
        self.traceID = traceID
        self.spanID = spanID
        self.droppedMetadata = droppedMetadata
    }

    enum CodingKeys: String, CodingKey {
        case time = "timeUnixNano", severity, label, message, metadata, source, file, function, line, traceID = "traceId", spanID = "spanId"
        case droppedMetadata = "droppedMetadataCount"
    }

    /// Only `timeUnixNano`, `severity` and `message` are required; the rest default to empty.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        time = try container.decode(UnixNanos.self, forKey: .time)
        severity = try container.decode(LogSeverity.self, forKey: .severity)
        message = try container.decode(String.self, forKey: .message)
        label = try container.decodeIfPresent(String.self, forKey: .label) ?? ""
        metadata = try container.decodeIfPresent(TelemetryAttributes.self, forKey: .metadata) ?? [:]
        source = try container.decodeIfPresent(String.self, forKey: .source) ?? ""
        file = try container.decodeIfPresent(String.self, forKey: .file) ?? ""
        function = try container.decodeIfPresent(String.self, forKey: .function) ?? ""
        line = try container.decodeIfPresent(UInt.self, forKey: .line) ?? 0
        traceID = try container.decodeIfPresent(TraceID.self, forKey: .traceID)
        spanID = try container.decodeIfPresent(SpanID.self, forKey: .spanID)
        droppedMetadata = try container.decodeIfPresent(Int.self, forKey: .droppedMetadata) ?? 0
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(time, forKey: .time)
        try container.encode(severity, forKey: .severity)
        try container.encode(message, forKey: .message)
        if !label.isEmpty { try container.encode(label, forKey: .label) }
        if !metadata.isEmpty { try container.encode(metadata, forKey: .metadata) }
        if !source.isEmpty { try container.encode(source, forKey: .source) }
        if !file.isEmpty { try container.encode(file, forKey: .file) }
        if !function.isEmpty { try container.encode(function, forKey: .function) }
        if line != 0 { try container.encode(line, forKey: .line) }
        try container.encodeIfPresent(traceID, forKey: .traceID)
        try container.encodeIfPresent(spanID, forKey: .spanID)
        if droppedMetadata != 0 { try container.encode(droppedMetadata, forKey: .droppedMetadata) }
    }
}

extension LogRecord {
    /// Reads a record from a parsed tree in one pass over its members, without `Decodable`'s containers: parleyd
    /// reads every record of an app's batches this way (a record's generic containers, their metadata lookups and
    /// key searches cost most of its decoding). It takes what the `Decodable` path takes, the same way (the last of
    /// a repeated member, null as absent for what is optional, unknown members ignored), and returns nil for
    /// anything else: for a record that one refuses, and for the rare one written in a way this one does not read
    /// (a time or line written as `1.0`), the `Decodable` path then decides, with its words for what is wrong.
    public init?(reading tree: JSONValue) {
        guard case .object(let members) = tree else { return nil }
        var time: UnixNanos?
        var severity: LogSeverity?
        var message: String?
        var record = LogRecord(time: UnixNanos(0), severity: .info, label: "", message: "")
        for member in members {
            let value = member.value
            switch member.key {
            case "timeUnixNano":
                switch value {
                case .number(let number): time = UInt64(number.text).map(UnixNanos.init)
                case .string(let text): time = UInt64(text).map(UnixNanos.init)
                default: time = nil
                }
                if time == nil { return nil }
            case "severity":
                guard case .string(let text) = value, let level = LogSeverity(rawValue: text) else { return nil }
                severity = level
            case "message":
                guard case .string(let text) = value else { return nil }
                message = text
            case "label": guard Self.read(value, into: &record.label) else { return nil }
            case "source": guard Self.read(value, into: &record.source) else { return nil }
            case "file": guard Self.read(value, into: &record.file) else { return nil }
            case "function": guard Self.read(value, into: &record.function) else { return nil }
            case "line": guard Self.read(value, into: &record.line) else { return nil }
            case "droppedMetadataCount": guard Self.read(value, into: &record.droppedMetadata) else { return nil }
            case "traceId": guard Self.read(value, into: &record.traceID, TraceID.init(hex:)) else { return nil }
            case "spanId": guard Self.read(value, into: &record.spanID, SpanID.init(hex:)) else { return nil }
            case "metadata":
                switch value {
                case .null: record.metadata = [:]
                case .object(let entries):
                    var metadata = TelemetryAttributes(minimumCapacity: entries.count)
                    for entry in entries {
                        guard let read = TelemetryValue(reading: entry.value) else { return nil }
                        metadata[entry.key] = read
                    }
                    record.metadata = metadata
                default: return nil
                }
            default: continue
            }
        }
        guard let time, let severity, let message else { return nil }
        record.time = time
        record.severity = severity
        record.message = message
        self = record
    }

    /// An optional integer member: null leaves zero, an integer in range is taken, anything else is refused.
    private static func read<Number: FixedWidthInteger>(_ value: JSONValue, into field: inout Number) -> Bool {
        switch value {
        case .null: field = 0
        case .number(let number):
            guard let read = Number(number.text) else { return false }
            field = read
        default: return false
        }
        return true
    }

    /// An optional id member: null leaves none, a string `make` accepts is taken, anything else is refused.
    private static func read<ID>(_ value: JSONValue, into field: inout ID?, _ make: (String) -> ID?) -> Bool {
        switch value {
        case .null: field = nil
        case .string(let text):
            guard let id = make(text) else { return false }
            field = id
        default: return false
        }
        return true
    }

    /// An optional text member: null leaves the default, a string is taken, anything else is refused.
    private static func read(_ value: JSONValue, into field: inout String) -> Bool {
        switch value {
        case .null: field = ""
        case .string(let text): field = text
        default: return false
        }
        return true
    }
}
