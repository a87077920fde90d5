/// How large a log record or span may be. Apps cut their records to these before sending; parleyd cuts what
/// arrives again, since it trusts no sender. Past a limit, text is cut (ending in "…"), attributes, events and
/// links beyond the count are dropped and counted in the record's `dropped…` fields, values nested deeper are
/// replaced by the text "…", and a batch past its size or count is refused whole
/// (``TelemetryBatchProblem``). Bytes are UTF-8 bytes. docs/protocol.md lists them.
public struct TelemetryLimits: Sendable, Hashable {
    /// A log message, or a span status's description.
    public var maximumMessageBytes = 32 * 1024
    /// A label, a span or event name, a source, file or function, an attribute key.
    public var maximumNameBytes = 256
    /// A string attribute value.
    public var maximumValueBytes = 8 * 1024
    /// Attributes (metadata) of one record, event or link; items of one array or map value.
    public var maximumAttributes = 128
    public var maximumEvents = 128
    public var maximumLinks = 128
    /// Arrays and maps inside an attribute value: a value at this depth that is an array or map becomes "…".
    public var maximumDepth = 8
    /// Records in one `parley.telemetry.Batch`.
    public var maximumBatchRecords = 4096
    /// A `parley.telemetry.Batch` payload; parleyd refuses a larger one before decoding it.
    public var maximumBatchBytes = 8 << 20

    public init() {}

    public static let `default` = TelemetryLimits()
}

/// Why a whole batch was refused.
public enum TelemetryBatchProblem: Error, Sendable, Hashable, CustomStringConvertible {
    case tooLarge(bytes: Int, limit: Int)
    case tooManyRecords(count: Int, limit: Int)
    /// Not JSON of the documented shape (invalid UTF-8 included); the decoder's words.
    case malformed(String)

    public var description: String {
        switch self {
        case .tooLarge(let bytes, let limit): "a telemetry batch of \(bytes) bytes is over the \(limit)-byte limit; send smaller batches"
        case .tooManyRecords(let count, let limit): "a telemetry batch of \(count) records is over the limit of \(limit); send smaller batches"
        case .malformed(let reason): "a telemetry batch is not valid: \(reason)"
        }
    }
}

/// What ``TelemetryLimits/apply(to:)`` changed in a batch.
public struct TelemetryCuts: Sendable, Hashable {
    /// Texts cut to their limit.
    public var textsCut = 0
    /// Attributes, events and links dropped past a count, and values replaced past the depth.
    public var itemsDropped = 0

    public init() {}

    public var isEmpty: Bool { textsCut == 0 && itemsDropped == 0 }
}

extension TelemetryLimits {
    /// A batch of `byteCount` bytes, decoded by `decode` once its size is known to be within the limit, its
    /// record count checked, and ``apply(to:)`` done.
    public func check(byteCount: Int, decode: () throws -> TelemetryBatch) throws(TelemetryBatchProblem) -> (batch: TelemetryBatch, cuts: TelemetryCuts) {
        guard byteCount <= maximumBatchBytes else { throw .tooLarge(bytes: byteCount, limit: maximumBatchBytes) }
        var batch: TelemetryBatch
        do {
            batch = try decode()
        } catch {
            throw .malformed(Self.reason(error))
        }
        guard batch.count <= maximumBatchRecords else { throw .tooManyRecords(count: batch.count, limit: maximumBatchRecords) }
        let cuts = apply(to: &batch)
        return (batch, cuts)
    }

    /// The decoder's error in a sentence: which field, and what was wrong with it.
    static func reason(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return "\(error)" }
        func path(_ context: DecodingError.Context) -> String {
            let path = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
            return path.isEmpty ? "" : " at \(path.hasPrefix(".") ? String(path.dropFirst()) : path)"
        }
        switch error {
        case .dataCorrupted(let context): return context.debugDescription + path(context)
        case .keyNotFound(let key, let context): return "\"\(key.stringValue)\" is missing" + path(context)
        case .typeMismatch(_, let context), .valueNotFound(_, let context): return context.debugDescription + path(context)
        @unknown default: return "\(error)"
        }
    }

    /// Cuts every record of `batch` to the limits, in place.
    public func apply(to batch: inout TelemetryBatch) -> TelemetryCuts {
        var cuts = TelemetryCuts()
        for index in batch.logs.indices { apply(to: &batch.logs[index], cuts: &cuts) }
        for index in batch.spans.indices { apply(to: &batch.spans[index], cuts: &cuts) }
        return cuts
    }

    public func apply(to record: inout LogRecord, cuts: inout TelemetryCuts) {
        record.message = cut(record.message, to: maximumMessageBytes, cuts: &cuts)
        record.label = cut(record.label, to: maximumNameBytes, cuts: &cuts)
        record.source = cut(record.source, to: maximumNameBytes, cuts: &cuts)
        record.file = cut(record.file, to: maximumNameBytes, cuts: &cuts)
        record.function = cut(record.function, to: maximumNameBytes, cuts: &cuts)
        record.droppedMetadata += limit(&record.metadata, depth: 0, cuts: &cuts)
    }

    public func apply(to span: inout SpanRecord, cuts: inout TelemetryCuts) {
        span.name = cut(span.name, to: maximumNameBytes, cuts: &cuts)
        if let message = span.status.message { span.status.message = cut(message, to: maximumMessageBytes, cuts: &cuts) }
        span.droppedAttributes += limit(&span.attributes, depth: 0, cuts: &cuts)
        if span.events.count > maximumEvents {
            span.droppedEvents += span.events.count - maximumEvents
            cuts.itemsDropped += span.events.count - maximumEvents
            span.events.removeLast(span.events.count - maximumEvents)
        }
        for index in span.events.indices {
            span.events[index].name = cut(span.events[index].name, to: maximumNameBytes, cuts: &cuts)
            _ = limit(&span.events[index].attributes, depth: 0, cuts: &cuts)
        }
        if span.links.count > maximumLinks {
            span.droppedLinks += span.links.count - maximumLinks
            cuts.itemsDropped += span.links.count - maximumLinks
            span.links.removeLast(span.links.count - maximumLinks)
        }
        for index in span.links.indices { _ = limit(&span.links[index].attributes, depth: 0, cuts: &cuts) }
    }

    /// Cuts a set of attributes of their own (a resource's) to the limits; returns how many were dropped.
    public func apply(to attributes: inout TelemetryAttributes, cuts: inout TelemetryCuts) -> Int {
        limit(&attributes, depth: 0, cuts: &cuts)
    }

    /// Keeps the first ``maximumAttributes`` keys in key order (so the same record always keeps the same ones);
    /// returns how many it dropped.
    func limit(_ attributes: inout TelemetryAttributes, depth: Int, cuts: inout TelemetryCuts) -> Int {
        var dropped = 0
        if attributes.count > maximumAttributes {
            let kept = attributes.keys.sorted().prefix(maximumAttributes)
            var smaller = TelemetryAttributes(minimumCapacity: maximumAttributes)
            for key in kept { smaller[key] = attributes[key] }
            dropped = attributes.count - maximumAttributes
            cuts.itemsDropped += dropped
            attributes = smaller
        }
        var result = TelemetryAttributes(minimumCapacity: attributes.count)
        for (key, value) in attributes {
            result[cut(key, to: maximumNameBytes, cuts: &cuts)] = limit(value, depth: depth + 1, cuts: &cuts)
        }
        attributes = result
        return dropped
    }

    func limit(_ value: TelemetryValue, depth: Int, cuts: inout TelemetryCuts) -> TelemetryValue {
        switch value {
        case .string(let text):
            return .string(cut(text, to: maximumValueBytes, cuts: &cuts))
        case .bool, .int, .double:
            return value
        case .array(var items):
            guard depth < maximumDepth else {
                cuts.itemsDropped += 1
                return .string("…")
            }
            if items.count > maximumAttributes {
                cuts.itemsDropped += items.count - maximumAttributes
                items.removeLast(items.count - maximumAttributes)
            }
            return .array(items.map { limit($0, depth: depth + 1, cuts: &cuts) })
        case .map(var items):
            guard depth < maximumDepth else {
                cuts.itemsDropped += 1
                return .string("…")
            }
            _ = limit(&items, depth: depth, cuts: &cuts)
            return .map(items)
        }
    }

    /// `text` cut at a character boundary to at most `limit` bytes, ending in "…" when cut.
    func cut(_ text: String, to limit: Int, cuts: inout TelemetryCuts) -> String {
        guard text.utf8.count > limit else { return text }
        cuts.textsCut += 1
        return Self.cut(text, toBytes: limit)
    }

    /// `text` cut to at most `limit` UTF-8 bytes, whole characters only, ending in "…" (3 bytes) when cut.
    public static func cut(_ text: String, toBytes limit: Int) -> String {
        guard text.utf8.count > limit else { return text }
        let room = max(0, limit - 3)
        var end = text.utf8.index(text.utf8.startIndex, offsetBy: room)
        // Back to a character boundary: never half a scalar or half a grapheme.
        while end > text.startIndex, String.Index(end, within: text) == nil {
            end = text.utf8.index(before: end)
        }
        return String(text[..<end]) + "…"
    }
}
