import ParleyWire

/// What an app sends parleyd of its logs and traces: one-way message `parley.telemetry.Batch`, JSON
/// `{"logs": [LogRecord], "spans": [SpanRecord]}` (either may be missing). parleyd stores the records in the
/// session of the app that sent them, beside its states (docs/protocol.md §14, docs/observability.md).
///
/// A batch is checked whole first (its size, its record count; JSON that does not decode), then record by record
/// against ``TelemetryLimits``: what is too long is cut, what is too many is dropped and counted, a record that
/// cannot be kept (a span whose ids are invalid) is refused alone.
public struct TelemetryBatch: Sendable, Hashable, Codable, NamedMessage {
    public static let messageType = "parley.telemetry.Batch"

    public var logs: [LogRecord]
    public var spans: [SpanRecord]

    public init(logs: [LogRecord] = [], spans: [SpanRecord] = []) {
        self.logs = logs
        self.spans = spans
    }

    public var count: Int { logs.count + spans.count }
    public var isEmpty: Bool { logs.isEmpty && spans.isEmpty }

    enum CodingKeys: String, CodingKey { case logs, spans }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        logs = try container.decodeIfPresent([LogRecord].self, forKey: .logs) ?? []
        spans = try container.decodeIfPresent([SpanRecord].self, forKey: .spans) ?? []
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        if !logs.isEmpty { try container.encode(logs, forKey: .logs) }
        if !spans.isEmpty { try container.encode(spans, forKey: .spans) }
    }
}
