import Foundation
import ParleyTelemetry
import SwiftProtobuf

/// Turns OTLP's messages into Parley's records: spans and log records of the same shape, resource by resource.
struct OTLPMapping {
    /// Nested messages deeper than this (attribute values inside values, mostly) make the body undecodable: well
    /// past any real instrumentation, well short of exhausting the stack.
    static let messageDepthLimit = 64

    /// How ids arrive: raw bytes in protobuf; in OTLP's JSON, hexadecimal text, which swift-protobuf's JSON
    /// mapping (base64 for `bytes`) has read as base64. Hexadecimal digits are all base64 characters and 32 (16)
    /// of them are a whole number of base64 quanta, so encoding those bytes as base64 again gives the text back
    /// exactly.
    enum IDForm {
        case raw
        case hexadecimalText
    }

    let ids: IDForm

    init(ids: IDForm) {
        self.ids = ids
    }

    /// The id as lower-case hexadecimal, or nil when it has the wrong length.
    func hex(_ data: Data, bytes: Int) -> String? {
        switch ids {
        case .raw:
            guard data.count == bytes else { return nil }
            return data.map { byte in (byte < 16 ? "0" : "") + String(byte, radix: 16) }.joined()
        case .hexadecimalText:
            let text = data.base64EncodedString()
            guard text.utf8.count == bytes * 2 else { return nil }
            return text
        }
    }

    func traceID(_ data: Data) -> TraceID? { hex(data, bytes: 16).flatMap(TraceID.init(hex:)) }
    func spanID(_ data: Data) -> SpanID? { hex(data, bytes: 8).flatMap(SpanID.init(hex:)) }

    // MARK: - Traces

    func export(_ request: Opentelemetry_Proto_Collector_Trace_V1_ExportTraceServiceRequest) -> OTLPExport {
        var export = OTLPExport(resources: [], rejected: 0, rejection: nil)
        for resourceSpans in request.resourceSpans {
            var spans: [SpanRecord] = []
            for scopeSpans in resourceSpans.scopeSpans {
                for span in scopeSpans.spans {
                    switch record(span, scope: scopeSpans.scope) {
                    case .success(let record): spans.append(record)
                    case .failure(let reason):
                        export.rejected += 1
                        if export.rejection == nil { export.rejection = reason.reason }
                    }
                }
            }
            export.resources.append(.init(attributes: attributes(resourceSpans.resource.attributes), batch: TelemetryBatch(spans: spans)))
        }
        return export
    }

    func record(_ span: Opentelemetry_Proto_Trace_V1_Span, scope: Opentelemetry_Proto_Common_V1_InstrumentationScope) -> Result<SpanRecord, OTLPDecodingError> {
        guard let trace = traceID(span.traceID) else { return .failure(.init(reason: "span \"\(span.name)\": its trace id is not 16 bytes, or is all zeros")) }
        guard let id = spanID(span.spanID) else { return .failure(.init(reason: "span \"\(span.name)\": its span id is not 8 bytes, or is all zeros")) }
        var parent: SpanID?
        if !span.parentSpanID.isEmpty {
            guard let valid = spanID(span.parentSpanID) else {
                return .failure(.init(reason: "span \"\(span.name)\": its parent span id is not 8 bytes"))
            }
            parent = valid
        }
        var attributes = attributes(span.attributes)
        if !scope.name.isEmpty { attributes["otel.scope.name"] = .string(scope.name) }
        let status: SpanRecord.Status =
            switch span.status.code {
            case .ok: .init(code: .ok, message: span.status.message.isEmpty ? nil : span.status.message)
            case .error: .init(code: .error, message: span.status.message.isEmpty ? nil : span.status.message)
            default: .unset
            }
        return .success(
            SpanRecord(
                traceID: trace, spanID: id, parentSpanID: parent, name: span.name, kind: kind(span.kind),
                start: UnixNanos(span.startTimeUnixNano), end: UnixNanos(span.endTimeUnixNano), status: status, attributes: attributes,
                events: span.events.map { .init(name: $0.name, time: UnixNanos($0.timeUnixNano), attributes: self.attributes($0.attributes)) },
                links: span.links.compactMap { link in
                    guard let trace = traceID(link.traceID), let id = spanID(link.spanID) else { return nil }
                    return .init(traceID: trace, spanID: id, attributes: self.attributes(link.attributes))
                },
                droppedAttributes: Int(span.droppedAttributesCount), droppedEvents: Int(span.droppedEventsCount),
                droppedLinks: Int(span.droppedLinksCount)
            ))
    }

    func kind(_ kind: Opentelemetry_Proto_Trace_V1_Span.SpanKind) -> SpanRecord.Kind {
        switch kind {
        case .server: .server
        case .client: .client
        case .producer: .producer
        case .consumer: .consumer
        default: .internal
        }
    }

    // MARK: - Logs

    func export(_ request: Opentelemetry_Proto_Collector_Logs_V1_ExportLogsServiceRequest) -> OTLPExport {
        var export = OTLPExport(resources: [], rejected: 0, rejection: nil)
        let now = UnixNanos.now
        for resourceLogs in request.resourceLogs {
            var logs: [LogRecord] = []
            for scopeLogs in resourceLogs.scopeLogs {
                for log in scopeLogs.logRecords {
                    switch record(log, scope: scopeLogs.scope, receivedAt: now) {
                    case .success(let record): logs.append(record)
                    case .failure(let reason):
                        export.rejected += 1
                        if export.rejection == nil { export.rejection = reason.reason }
                    }
                }
            }
            export.resources.append(.init(attributes: attributes(resourceLogs.resource.attributes), batch: TelemetryBatch(logs: logs)))
        }
        return export
    }

    /// Semantic-convention attributes that say where the call is, current names first, then the older ones.
    static let fileKeys = ["code.file.path", "code.filepath"]
    static let functionKeys = ["code.function.name", "code.function"]
    static let lineKeys = ["code.line.number", "code.lineno"]
    /// Where a Swift app's module (swift-log's `source`) travels: what `OTLPRecordMapping` writes it as.
    static let sourceKey = "code.namespace"

    func record(
        _ log: Opentelemetry_Proto_Logs_V1_LogRecord, scope: Opentelemetry_Proto_Common_V1_InstrumentationScope, receivedAt now: UnixNanos
    ) -> Result<LogRecord, OTLPDecodingError> {
        var trace: TraceID?
        var span: SpanID?
        if !log.traceID.isEmpty {
            guard let valid = traceID(log.traceID) else { return .failure(.init(reason: "a log record's trace id is not 16 bytes")) }
            trace = valid
        }
        if !log.spanID.isEmpty {
            guard let valid = spanID(log.spanID) else { return .failure(.init(reason: "a log record's span id is not 8 bytes")) }
            span = valid
        }
        // The time the event happened; when the source did not know it, the time the SDK observed it, else now.
        let time = log.timeUnixNano != 0 ? log.timeUnixNano : (log.observedTimeUnixNano != 0 ? log.observedTimeUnixNano : now.value)
        var metadata = attributes(log.attributes)
        func take(_ keys: [String]) -> TelemetryValue? {
            var found: TelemetryValue?
            for key in keys { if let value = metadata.removeValue(forKey: key), found == nil { found = value } }
            return found
        }
        let file = take(Self.fileKeys)
        let function = take(Self.functionKeys)
        let line = take(Self.lineKeys)
        let source = take([Self.sourceKey])
        let message: String
        switch log.body.value {
        case .stringValue(let text)?: message = text
        case nil: message = log.eventName
        default: message = value(log.body).description
        }
        return .success(
            LogRecord(
                time: UnixNanos(time), severity: severity(log), label: scope.name, message: message, metadata: metadata,
                source: source.map(\.description) ?? "", file: file.map(\.description) ?? "", function: function.map(\.description) ?? "",
                line: line.flatMap { if case .int(let number) = $0, number > 0 { UInt(number) } else { nil } } ?? 0,
                traceID: trace, spanID: span, droppedMetadata: Int(log.droppedAttributesCount)
            ))
    }

    /// The level from the severity number; without one, from the text (`WARN`, `Error`, …); else info.
    func severity(_ log: Opentelemetry_Proto_Logs_V1_LogRecord) -> LogSeverity {
        if let level = LogSeverity(number: log.severityNumber.rawValue) { return level }
        switch log.severityText.lowercased() {
        case "trace": return .trace
        case "debug": return .debug
        case "notice": return .notice
        case "warn", "warning": return .warning
        case "error": return .error
        case "fatal", "critical", "crit": return .critical
        default: return .info
        }
    }

    // MARK: - Values

    func attributes(_ pairs: [Opentelemetry_Proto_Common_V1_KeyValue]) -> TelemetryAttributes {
        var result = TelemetryAttributes(minimumCapacity: pairs.count)
        for pair in pairs where pair.hasValue && pair.value.value != nil {
            result[pair.key] = value(pair.value)
        }
        return result
    }

    func value(_ value: Opentelemetry_Proto_Common_V1_AnyValue) -> TelemetryValue {
        switch value.value {
        case .stringValue(let text)?: .string(text)
        case .boolValue(let flag)?: .bool(flag)
        case .intValue(let number)?: .int(number)
        case .doubleValue(let number)?: .double(number)
        case .arrayValue(let array)?: .array(array.values.map(self.value))
        case .kvlistValue(let list)?: .map(attributes(list.values))
        // Bytes have no place in a JSON attribute; OTLP's own JSON mapping writes them as base64.
        case .bytesValue(let data)?: .string(data.base64EncodedString())
        case nil: .string("")
        }
    }

    static func describe(_ error: BinaryDecodingError) -> String {
        switch error {
        case .truncated: "it ends in the middle of a field"
        case .malformedProtobuf, .trailingGarbage: "it is not protobuf of that message"
        case .invalidUTF8: "a string is not valid UTF-8"
        case .messageDepthLimit: "messages are nested more than \(messageDepthLimit) deep"
        default: "\(error)"
        }
    }

    static func describe(_ error: JSONDecodingError) -> String {
        switch error {
        case .truncated: "it ends in the middle of a value"
        case .invalidUTF8: "it is not valid UTF-8"
        case .messageDepthLimit: "objects are nested more than \(messageDepthLimit) deep"
        default: "\(error)"
        }
    }
}
