import Instrumentation
import ParleyRemoteDebugger
import ParleyTelemetry
import Synchronization
import Tracing

/// A span of ``ParleyTracer``: what the span protocol lets instrumentation change (its name, attributes, status,
/// events, links) is kept under a lock until ``end(at:)``, which turns it into one ``SpanRecord`` for the
/// exporter. A span ends once; later changes and ends are ignored.
public final class ParleySpan: Tracing.Span {
    public let context: ServiceContext
    /// This span's ids, trace flags and `tracestate`.
    public let traceContext: TraceContext
    public let parentSpanID: SpanID?
    public let kind: SpanRecord.Kind
    /// Nanoseconds since 1970.
    public let start: UInt64
    private let tracer: ParleyTracer
    private let state: Mutex<Recording>

    private struct Recording {
        var operationName: String
        var attributes = SpanAttributes()
        var status: SpanRecord.Status = .unset
        var events: [SpanRecord.Event] = []
        var links: [SpanRecord.Link] = []
        /// Links to spans of another tracer, whose ids this one cannot read.
        var droppedLinks = 0
        var ended = false
    }

    init(
        operationName: String, kind: SpanRecord.Kind, start: UInt64, context: ServiceContext, traceContext: TraceContext, parentSpanID: SpanID?,
        tracer: ParleyTracer
    ) {
        self.context = context
        self.traceContext = traceContext
        self.parentSpanID = parentSpanID
        self.kind = kind
        self.start = start
        self.tracer = tracer
        state = Mutex(Recording(operationName: operationName))
    }

    public var operationName: String {
        get { state.withLock { $0.operationName } }
        set { state.withLock { if !$0.ended { $0.operationName = newValue } } }
    }

    public var attributes: SpanAttributes {
        get { state.withLock { $0.attributes } }
        set { state.withLock { if !$0.ended { $0.attributes = newValue } } }
    }

    public var isRecording: Bool { state.withLock { !$0.ended } }

    public func setStatus(_ status: SpanStatus) {
        let converted: SpanRecord.Status =
            switch status.code {
            case .ok: SpanRecord.Status(code: .ok)
            case .error: SpanRecord.Status(code: .error, message: status.message)
            }
        state.withLock { recording in
            // OpenTelemetry: once ok, a span stays ok.
            guard !recording.ended, recording.status.code != .ok else { return }
            recording.status = converted
        }
    }

    public func addEvent(_ event: SpanEvent) {
        let converted = SpanRecord.Event(name: event.name, time: UnixNanos(event.nanosecondsSinceEpoch), attributes: event.attributes.telemetryAttributes)
        state.withLock { if !$0.ended { $0.events.append(converted) } }
    }

    /// An `exception` event, as OpenTelemetry's semantic conventions write one: `exception.type` (the error's
    /// type, with its module) and `exception.message` (its description), beside `attributes`. The status is
    /// left as it is: whether an error fails the span is the instrumentation's call (`withSpan` sets it).
    public func recordError<Instant: TracerInstant>(_ error: any Error, attributes: SpanAttributes, at instant: @autoclosure () -> Instant) {
        var eventAttributes = attributes.telemetryAttributes
        eventAttributes["exception.type"] = .string(String(reflecting: type(of: error)))
        eventAttributes["exception.message"] = .string("\(error)")
        let event = SpanRecord.Event(name: "exception", time: UnixNanos(instant().nanosecondsSinceEpoch), attributes: eventAttributes)
        state.withLock { if !$0.ended { $0.events.append(event) } }
    }

    /// A link to a span of this tracer; one of another tracer (whose ids are not readable here) is counted in the
    /// record's dropped links.
    public func addLink(_ link: SpanLink) {
        let target = link.context.parleyTraceContext
        let converted = target.map { SpanRecord.Link(traceID: $0.traceID, spanID: $0.spanID, attributes: link.attributes.telemetryAttributes) }
        state.withLock { recording in
            guard !recording.ended else { return }
            if let converted { recording.links.append(converted) } else { recording.droppedLinks += 1 }
        }
    }

    public func end<Instant: TracerInstant>(at instant: @autoclosure () -> Instant) {
        let end = instant().nanosecondsSinceEpoch
        guard
            let recording = state.withLock({ recording -> Recording? in
                guard !recording.ended else { return nil }
                recording.ended = true
                return recording
            })
        else { return }
        tracer.finished(
            SpanRecord(
                traceID: traceContext.traceID, spanID: traceContext.spanID, parentSpanID: parentSpanID, name: recording.operationName, kind: kind,
                start: UnixNanos(start), end: UnixNanos(end), status: recording.status, attributes: recording.attributes.telemetryAttributes,
                events: recording.events, links: recording.links, droppedLinks: recording.droppedLinks
            )
        )
    }
}

extension SpanAttributes {
    /// The attributes as telemetry values: integers, doubles, booleans and strings keep their type (also when
    /// they arrive as `stringConvertible`, as an `[Int]` set through the attributes' subscript does), arrays of
    /// them become arrays, anything else its description.
    public var telemetryAttributes: TelemetryAttributes {
        var converted = TelemetryAttributes()
        forEach { name, attribute in converted[name] = attribute.telemetryValue }
        return converted
    }
}

extension SpanAttribute {
    public var telemetryValue: TelemetryValue {
        switch self {
        case .int32(let value): .int(Int64(value))
        case .int64(let value): .int(value)
        case .double(let value): .double(value)
        case .bool(let value): .bool(value)
        case .string(let value): .string(value)
        case .int32Array(let values): .array(values.map { .int(Int64($0)) })
        case .int64Array(let values): .array(values.map { .int($0) })
        case .doubleArray(let values): .array(values.map { .double($0) })
        case .boolArray(let values): .array(values.map { .bool($0) })
        case .stringArray(let values): .array(values.map { .string($0) })
        case .stringConvertible(let value): TelemetryValue(typing: value)
        case .stringConvertibleArray(let values): .array(values.map { TelemetryValue(typing: $0) })
        default: .string("\(self)")
        }
    }
}
