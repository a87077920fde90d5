import Foundation
import ParleyTelemetry
import SwiftProtobuf

/// Parley's records as OTLP export requests, the way round ``OTLPExport/decode(_:signal:encoding:)`` reads them:
/// what parleyd sends on to another OTLP/HTTP receiver (an OpenTelemetry Collector, Jaeger, Tempo, another parleyd).
/// A record that came in through OTLP goes out as it came (its scope, its `code.*` attributes, its ids).
public enum OTLPExportRequest {
    /// The records of one service instance: its resource's attributes (`service.name`, `service.instance.id`, …)
    /// and its log records and spans.
    public struct Resource: Sendable, Hashable {
        public var attributes: TelemetryAttributes
        public var batch: TelemetryBatch

        public init(attributes: TelemetryAttributes, batch: TelemetryBatch) {
            self.attributes = attributes
            self.batch = batch
        }
    }

    /// The request body, `application/x-protobuf`: an `ExportTraceServiceRequest` of the resources' spans for
    /// `.traces`, an `ExportLogsServiceRequest` of their log records for `.logs`; resources with none are left out.
    public static func encode(_ resources: [Resource], signal: OTLPSignal) throws(OTLPEncodingError) -> Data {
        let mapping = OTLPRecordMapping()
        do {
            switch signal {
            case .traces: return try mapping.traces(resources).serializedData()
            case .logs: return try mapping.logs(resources).serializedData()
            }
        } catch {
            throw OTLPEncodingError(reason: "the \(signal.rawValue) could not be encoded as protobuf: \(error)")
        }
    }

    /// What a receiver's answer to an export (`application/x-protobuf`) says it refused: its partial success. Zero
    /// and nil for an answer that has none, or is not protobuf (an empty body, JSON).
    public static func partialSuccess(ofResponse body: Data, signal: OTLPSignal) -> (rejected: Int, message: String?) {
        let rejected: Int64
        let message: String
        switch signal {
        case .traces:
            guard let response = try? Opentelemetry_Proto_Collector_Trace_V1_ExportTraceServiceResponse(serializedBytes: body) else { return (0, nil) }
            (rejected, message) = (response.partialSuccess.rejectedSpans, response.partialSuccess.errorMessage)
        case .logs:
            guard let response = try? Opentelemetry_Proto_Collector_Logs_V1_ExportLogsServiceResponse(serializedBytes: body) else { return (0, nil) }
            (rejected, message) = (response.partialSuccess.rejectedLogRecords, response.partialSuccess.errorMessage)
        }
        return (Int(clamping: max(0, rejected)), message.isEmpty ? nil : message)
    }
}

/// Records that could not be made into a request body.
public struct OTLPEncodingError: Error, Sendable, Hashable, CustomStringConvertible {
    public var reason: String
    public var description: String { reason }
}

/// Turns Parley's records into OTLP's messages: the reverse of ``OTLPMapping``.
struct OTLPRecordMapping {
    // MARK: - Traces

    func traces(_ resources: [OTLPExportRequest.Resource]) -> Opentelemetry_Proto_Collector_Trace_V1_ExportTraceServiceRequest {
        var request = Opentelemetry_Proto_Collector_Trace_V1_ExportTraceServiceRequest()
        for resource in resources where !resource.batch.spans.isEmpty {
            var resourceSpans = Opentelemetry_Proto_Trace_V1_ResourceSpans()
            resourceSpans.resource.attributes = keyValues(resource.attributes)
            resourceSpans.scopeSpans = grouped(resource.batch.spans.map(span)).map { name, spans in
                var scopeSpans = Opentelemetry_Proto_Trace_V1_ScopeSpans()
                scopeSpans.scope.name = name
                scopeSpans.spans = spans
                return scopeSpans
            }
            request.resourceSpans.append(resourceSpans)
        }
        return request
    }

    /// The span, and the name of its instrumentation scope: the `otel.scope.name` attribute ``OTLPMapping`` kept it
    /// in, taken out again.
    func span(_ record: SpanRecord) -> (scope: String, item: Opentelemetry_Proto_Trace_V1_Span) {
        var attributes = record.attributes
        let scope = attributes.removeValue(forKey: "otel.scope.name").map(\.description) ?? ""
        var span = Opentelemetry_Proto_Trace_V1_Span()
        span.traceID = bytes(record.traceID.hex)
        span.spanID = bytes(record.spanID.hex)
        if let parent = record.parentSpanID { span.parentSpanID = bytes(parent.hex) }
        span.name = record.name
        span.kind =
            switch record.kind {
            case .internal: .internal
            case .server: .server
            case .client: .client
            case .producer: .producer
            case .consumer: .consumer
            }
        span.startTimeUnixNano = record.start.value
        span.endTimeUnixNano = record.end.value
        switch record.status.code {
        case .unset: break
        case .ok: span.status.code = .ok
        case .error: span.status.code = .error
        }
        if record.status.code != .unset, let message = record.status.message { span.status.message = message }
        span.attributes = keyValues(attributes)
        span.events = record.events.map { recorded in
            var event = Opentelemetry_Proto_Trace_V1_Span.Event()
            event.name = recorded.name
            event.timeUnixNano = recorded.time.value
            event.attributes = keyValues(recorded.attributes)
            return event
        }
        span.links = record.links.map { recorded in
            var link = Opentelemetry_Proto_Trace_V1_Span.Link()
            link.traceID = bytes(recorded.traceID.hex)
            link.spanID = bytes(recorded.spanID.hex)
            link.attributes = keyValues(recorded.attributes)
            return link
        }
        span.droppedAttributesCount = UInt32(clamping: record.droppedAttributes)
        span.droppedEventsCount = UInt32(clamping: record.droppedEvents)
        span.droppedLinksCount = UInt32(clamping: record.droppedLinks)
        return (scope, span)
    }

    // MARK: - Logs

    func logs(_ resources: [OTLPExportRequest.Resource]) -> Opentelemetry_Proto_Collector_Logs_V1_ExportLogsServiceRequest {
        var request = Opentelemetry_Proto_Collector_Logs_V1_ExportLogsServiceRequest()
        for resource in resources where !resource.batch.logs.isEmpty {
            var resourceLogs = Opentelemetry_Proto_Logs_V1_ResourceLogs()
            resourceLogs.resource.attributes = keyValues(resource.attributes)
            resourceLogs.scopeLogs = grouped(resource.batch.logs.map(log)).map { name, records in
                var scopeLogs = Opentelemetry_Proto_Logs_V1_ScopeLogs()
                scopeLogs.scope.name = name
                scopeLogs.logRecords = records
                return scopeLogs
            }
            request.resourceLogs.append(resourceLogs)
        }
        return request
    }

    /// The log record under its logger's label as the scope. Where the call is goes into the semantic conventions'
    /// current `code.*` attributes, the module into `code.namespace`.
    func log(_ record: LogRecord) -> (scope: String, item: Opentelemetry_Proto_Logs_V1_LogRecord) {
        var log = Opentelemetry_Proto_Logs_V1_LogRecord()
        log.timeUnixNano = record.time.value
        log.observedTimeUnixNano = record.time.value
        log.severityNumber = Opentelemetry_Proto_Logs_V1_SeverityNumber(rawValue: record.severity.number) ?? .unspecified
        log.severityText = record.severity.rawValue.uppercased()
        log.body.stringValue = record.message
        var attributes = record.metadata
        if !record.file.isEmpty { attributes[OTLPMapping.fileKeys[0]] = .string(record.file) }
        if !record.function.isEmpty { attributes[OTLPMapping.functionKeys[0]] = .string(record.function) }
        if record.line > 0 { attributes[OTLPMapping.lineKeys[0]] = .int(Int64(clamping: record.line)) }
        if !record.source.isEmpty { attributes[OTLPMapping.sourceKey] = .string(record.source) }
        log.attributes = keyValues(attributes)
        log.droppedAttributesCount = UInt32(clamping: record.droppedMetadata)
        if let trace = record.traceID { log.traceID = bytes(trace.hex) }
        if let span = record.spanID { log.spanID = bytes(span.hex) }
        return (record.label, log)
    }

    // MARK: - Values

    /// Items under their scope names, scopes in the order they first appear.
    func grouped<Item>(_ items: [(scope: String, item: Item)]) -> [(String, [Item])] {
        var order: [String] = []
        var groups: [String: [Item]] = [:]
        for (scope, item) in items {
            if groups[scope] == nil { order.append(scope) }
            groups[scope, default: []].append(item)
        }
        return order.map { ($0, groups[$0]!) }
    }

    /// Attributes in key order, so that the same record always makes the same bytes.
    func keyValues(_ attributes: TelemetryAttributes) -> [Opentelemetry_Proto_Common_V1_KeyValue] {
        attributes.sorted { $0.key < $1.key }.map { key, value in
            var pair = Opentelemetry_Proto_Common_V1_KeyValue()
            pair.key = key
            pair.value = anyValue(value)
            return pair
        }
    }

    func anyValue(_ value: TelemetryValue) -> Opentelemetry_Proto_Common_V1_AnyValue {
        var any = Opentelemetry_Proto_Common_V1_AnyValue()
        switch value {
        case .string(let text): any.stringValue = text
        case .bool(let flag): any.boolValue = flag
        case .int(let number): any.intValue = number
        case .double(let number): any.doubleValue = number
        case .array(let items): any.arrayValue.values = items.map(anyValue)
        case .map(let members): any.kvlistValue.values = keyValues(members)
        }
        return any
    }

    /// The bytes of an id's hexadecimal digits (``TraceID`` and ``SpanID`` hold only valid ones).
    func bytes(_ hex: String) -> Data {
        var data = Data(capacity: hex.utf8.count / 2)
        var high: UInt8?
        for character in hex.utf8 {
            let nibble: UInt8 =
                switch character {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): character - UInt8(ascii: "a") + 10
                default: character - UInt8(ascii: "A") + 10
                }
            if let first = high {
                data.append(first << 4 | nibble)
                high = nil
            } else {
                high = nibble
            }
        }
        return data
    }
}
