/// One finished span, in the shape of an OpenTelemetry span (trace data model), so that spans from other
/// languages (OTLP) map onto the same record.
public struct SpanRecord: Sendable, Hashable, Codable {
    /// OpenTelemetry's `SpanKind`.
    public enum Kind: String, Sendable, Hashable, Codable, CaseIterable {
        case `internal`, server, client, producer, consumer
    }

    /// OpenTelemetry's `Status`: unset unless the instrumentation said ok or error; an error may say why.
    public struct Status: Sendable, Hashable, Codable {
        public enum Code: String, Sendable, Hashable, Codable, CaseIterable {
            case unset, ok, error
        }
        public var code: Code
        public var message: String?

        public init(code: Code, message: String? = nil) {
            self.code = code
            self.message = message
        }

        public static let unset = Status(code: .unset)
    }

    /// Something that happened during the span (an exception, a retry), at a time.
    public struct Event: Sendable, Hashable, Codable {
        public var name: String
        public var time: UnixNanos
        public var attributes: TelemetryAttributes

        public init(name: String, time: UnixNanos, attributes: TelemetryAttributes = [:]) {
            self.name = name
            self.time = time
            self.attributes = attributes
        }

        enum CodingKeys: String, CodingKey { case name, time = "timeUnixNano", attributes }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            name = try container.decode(String.self, forKey: .name)
            time = try container.decode(UnixNanos.self, forKey: .time)
            attributes = try container.decodeIfPresent(TelemetryAttributes.self, forKey: .attributes) ?? [:]
        }
    }

    /// A span of another trace (or of this one) this span relates to, other than its parent.
    public struct Link: Sendable, Hashable, Codable {
        public var traceID: TraceID
        public var spanID: SpanID
        public var attributes: TelemetryAttributes

        public init(traceID: TraceID, spanID: SpanID, attributes: TelemetryAttributes = [:]) {
            self.traceID = traceID
            self.spanID = spanID
            self.attributes = attributes
        }

        enum CodingKeys: String, CodingKey { case traceID = "traceId", spanID = "spanId", attributes }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            traceID = try container.decode(TraceID.self, forKey: .traceID)
            spanID = try container.decode(SpanID.self, forKey: .spanID)
            attributes = try container.decodeIfPresent(TelemetryAttributes.self, forKey: .attributes) ?? [:]
        }
    }

    public var traceID: TraceID
    public var spanID: SpanID
    /// Nil for a trace's root span.
    public var parentSpanID: SpanID?
    public var name: String
    public var kind: Kind
    public var start: UnixNanos
    public var end: UnixNanos
    public var status: Status
    public var attributes: TelemetryAttributes
    public var events: [Event]
    public var links: [Link]
    /// What was dropped on the way (past the limits), by the app or by parleyd.
    public var droppedAttributes: Int
    public var droppedEvents: Int
    public var droppedLinks: Int

    public init(
        traceID: TraceID, spanID: SpanID, parentSpanID: SpanID? = nil, name: String, kind: Kind = .internal, start: UnixNanos, end: UnixNanos,
        status: Status = .unset, attributes: TelemetryAttributes = [:], events: [Event] = [], links: [Link] = [], droppedAttributes: Int = 0,
        droppedEvents: Int = 0, droppedLinks: Int = 0
    ) {
        self.traceID = traceID
        self.spanID = spanID
        self.parentSpanID = parentSpanID
        self.name = name
        self.kind = kind
        self.start = start
        self.end = end
        self.status = status
        self.attributes = attributes
        self.events = events
        self.links = links
        self.droppedAttributes = droppedAttributes
        self.droppedEvents = droppedEvents
        self.droppedLinks = droppedLinks
    }

    /// How long the span took, in nanoseconds (zero when the end is before the start).
    public var durationNanos: UInt64 { end.value >= start.value ? end.value - start.value : 0 }

    enum CodingKeys: String, CodingKey {
        case traceID = "traceId", spanID = "spanId", parentSpanID = "parentSpanId", name, kind, start = "startTimeUnixNano"
        case end = "endTimeUnixNano", status, attributes, events, links, droppedAttributes = "droppedAttributesCount"
        case droppedEvents = "droppedEventsCount", droppedLinks = "droppedLinksCount"
    }

    /// Required: the ids, `name`, `startTimeUnixNano` and `endTimeUnixNano`; the rest defaults (kind internal,
    /// status unset, nothing attached).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        traceID = try container.decode(TraceID.self, forKey: .traceID)
        spanID = try container.decode(SpanID.self, forKey: .spanID)
        parentSpanID = try container.decodeIfPresent(SpanID.self, forKey: .parentSpanID)
        name = try container.decode(String.self, forKey: .name)
        kind = try container.decodeIfPresent(Kind.self, forKey: .kind) ?? .internal
        start = try container.decode(UnixNanos.self, forKey: .start)
        end = try container.decode(UnixNanos.self, forKey: .end)
        status = try container.decodeIfPresent(Status.self, forKey: .status) ?? .unset
        attributes = try container.decodeIfPresent(TelemetryAttributes.self, forKey: .attributes) ?? [:]
        events = try container.decodeIfPresent([Event].self, forKey: .events) ?? []
        links = try container.decodeIfPresent([Link].self, forKey: .links) ?? []
        droppedAttributes = try container.decodeIfPresent(Int.self, forKey: .droppedAttributes) ?? 0
        droppedEvents = try container.decodeIfPresent(Int.self, forKey: .droppedEvents) ?? 0
        droppedLinks = try container.decodeIfPresent(Int.self, forKey: .droppedLinks) ?? 0
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(traceID, forKey: .traceID)
        try container.encode(spanID, forKey: .spanID)
        try container.encodeIfPresent(parentSpanID, forKey: .parentSpanID)
        try container.encode(name, forKey: .name)
        try container.encode(kind, forKey: .kind)
        try container.encode(start, forKey: .start)
        try container.encode(end, forKey: .end)
        if status != .unset { try container.encode(status, forKey: .status) }
        if !attributes.isEmpty { try container.encode(attributes, forKey: .attributes) }
        if !events.isEmpty { try container.encode(events, forKey: .events) }
        if !links.isEmpty { try container.encode(links, forKey: .links) }
        if droppedAttributes != 0 { try container.encode(droppedAttributes, forKey: .droppedAttributes) }
        if droppedEvents != 0 { try container.encode(droppedEvents, forKey: .droppedEvents) }
        if droppedLinks != 0 { try container.encode(droppedLinks, forKey: .droppedLinks) }
    }
}
