import Foundation
import ParleyDebugger
import ParleyTelemetry

// How the web API writes the timeline's records (docs/web.md): the shapes of the control socket and of
// `parley.telemetry.Batch` (so a reader of one reads the other), with two differences for browsers. Every time
// in nanoseconds (and every duration in nanoseconds) is a decimal string, as OTLP's JSON mapping writes 64-bit
// integers: a JavaScript number holds integers exactly only up to 2^53, and nanoseconds since 1970 need 61 bits.
// And every key is always there (`null`, `""`, `{}` or `[]` when empty), as in the rest of the web API.
// `UnixNanos` reads a decimal string too, so what is written here decodes back into the same records.

/// Nanoseconds as a decimal string.
struct NanosText: Encodable {
    let value: UInt64

    init(_ value: UInt64) { self.value = value }
    init(_ time: UnixNanos) { value = time.value }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(String(value))
    }

    /// A state's time (milliseconds, as the history keeps it) in nanoseconds, computed in integers: through
    /// `Double`, 1.7e18 ns would come out a few hundred nanoseconds off.
    static func milliseconds(of date: Date) -> UInt64 {
        let milliseconds = (date.timeIntervalSince1970 * 1000).rounded()
        return milliseconds <= 0 ? 0 : UInt64(milliseconds) * 1_000_000
    }
}

/// A stored log record: `{"id", "session", "record": {…}}`.
struct WebLogRecord: Encodable {
    let stored: StoredLogRecord

    private enum CodingKeys: String, CodingKey { case id, session, record }
    private enum RecordKeys: String, CodingKey {
        case time = "timeUnixNano", severity, label, message, metadata, source, file, function, line, traceID = "traceId", spanID = "spanId"
        case droppedMetadata = "droppedMetadataCount"
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(stored.id, forKey: .id)
        try container.encode(stored.session, forKey: .session)
        let record = stored.record
        var fields = container.nestedContainer(keyedBy: RecordKeys.self, forKey: .record)
        try fields.encode(NanosText(record.time), forKey: .time)
        try fields.encode(record.severity, forKey: .severity)
        try fields.encode(record.label, forKey: .label)
        try fields.encode(record.message, forKey: .message)
        try fields.encode(record.metadata, forKey: .metadata)
        try fields.encode(record.source, forKey: .source)
        try fields.encode(record.file, forKey: .file)
        try fields.encode(record.function, forKey: .function)
        try fields.encode(record.line, forKey: .line)
        try fields.encode(record.traceID, forKey: .traceID)
        try fields.encode(record.spanID, forKey: .spanID)
        try fields.encode(record.droppedMetadata, forKey: .droppedMetadata)
    }
}

/// A stored span: `{"id", "session", "span": {…}}`.
struct WebSpan: Encodable {
    let stored: StoredSpan

    private enum CodingKeys: String, CodingKey { case id, session, span }
    private enum SpanKeys: String, CodingKey {
        case traceID = "traceId", spanID = "spanId", parentSpanID = "parentSpanId", name, kind, start = "startTimeUnixNano"
        case end = "endTimeUnixNano", status, attributes, events, links, droppedAttributes = "droppedAttributesCount"
        case droppedEvents = "droppedEventsCount", droppedLinks = "droppedLinksCount"
    }
    private enum StatusKeys: String, CodingKey { case code, message }
    private enum EventKeys: String, CodingKey { case name, time = "timeUnixNano", attributes }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(stored.id, forKey: .id)
        try container.encode(stored.session, forKey: .session)
        let span = stored.span
        var fields = container.nestedContainer(keyedBy: SpanKeys.self, forKey: .span)
        try fields.encode(span.traceID, forKey: .traceID)
        try fields.encode(span.spanID, forKey: .spanID)
        try fields.encode(span.parentSpanID, forKey: .parentSpanID)
        try fields.encode(span.name, forKey: .name)
        try fields.encode(span.kind, forKey: .kind)
        try fields.encode(NanosText(span.start), forKey: .start)
        try fields.encode(NanosText(span.end), forKey: .end)
        var status = fields.nestedContainer(keyedBy: StatusKeys.self, forKey: .status)
        try status.encode(span.status.code, forKey: .code)
        try status.encode(span.status.message, forKey: .message)
        try fields.encode(span.attributes, forKey: .attributes)
        var events = fields.nestedUnkeyedContainer(forKey: .events)
        for event in span.events {
            var fields = events.nestedContainer(keyedBy: EventKeys.self)
            try fields.encode(event.name, forKey: .name)
            try fields.encode(NanosText(event.time), forKey: .time)
            try fields.encode(event.attributes, forKey: .attributes)
        }
        try fields.encode(span.links, forKey: .links)
        try fields.encode(span.droppedAttributes, forKey: .droppedAttributes)
        try fields.encode(span.droppedEvents, forKey: .droppedEvents)
        try fields.encode(span.droppedLinks, forKey: .droppedLinks)
    }
}

/// One row of the timeline: `{"kind": "state"|"log"|"span", "time": "NANOS", "item": {…}}`; `time` is where the
/// row sits (a state's recording time, a log record's time, a span's start), so a page orders rows that arrive
/// live without knowing each kind's fields.
struct WebTimelineItem: Encodable {
    let item: TimelineItem

    private enum CodingKeys: String, CodingKey { case kind, time, item }

    var time: UInt64 {
        switch item {
        case .state(let entry): NanosText.milliseconds(of: entry.time)
        case .log(let log): log.record.time.value
        case .span(let span): span.span.start.value
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(item.kind, forKey: .kind)
        try container.encode(NanosText(time), forKey: .time)
        switch item {
        case .state(let entry): try container.encode(entry, forKey: .item)
        case .log(let log): try container.encode(WebLogRecord(stored: log), forKey: .item)
        case .span(let span): try container.encode(WebSpan(stored: span), forKey: .item)
        }
    }
}

/// A trace as the list shows it.
struct WebTraceSummary: Encodable {
    let summary: TraceSummary

    private enum CodingKeys: String, CodingKey { case traceID = "traceId", name, start = "startTimeUnixNano", durationNanos, spanCount, errorCount, sessions }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(summary.traceID, forKey: .traceID)
        try container.encode(summary.name, forKey: .name)
        try container.encode(NanosText(summary.start), forKey: .start)
        try container.encode(NanosText(summary.durationNanos), forKey: .durationNanos)
        try container.encode(summary.spanCount, forKey: .spanCount)
        try container.encode(summary.errorCount, forKey: .errorCount)
        try container.encode(summary.sessions, forKey: .sessions)
    }
}

struct TimelinePage: Encodable {
    var items: [WebTimelineItem]
    var total: Int
    var offset: Int
}

/// The state shown beside a log record or a span: the newest one recorded before it, or null.
struct StateAt: Encodable {
    var entry: EntrySummary?

    private enum CodingKeys: String, CodingKey { case entry }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(entry, forKey: .entry)
    }
}

struct TraceList: Encodable { var traces: [WebTraceSummary] }

struct TraceSpans: Encodable {
    var traceID: String
    var spans: [WebSpan]
    private enum CodingKeys: String, CodingKey { case traceID = "traceId", spans }
}
