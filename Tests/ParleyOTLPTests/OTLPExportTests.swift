import Foundation
import ParleyTelemetry
import SwiftProtobuf
import Testing

@testable import ParleyOTLP

@Suite("OTLP export requests read into Parley's records")
struct OTLPExportTests {
    typealias TraceRequest = Opentelemetry_Proto_Collector_Trace_V1_ExportTraceServiceRequest
    typealias LogsRequest = Opentelemetry_Proto_Collector_Logs_V1_ExportLogsServiceRequest

    static let traceBytes = Data((1...16).map { UInt8($0) })
    static let spanBytes = Data([0xA0, 1, 2, 3, 4, 5, 6, 7])
    static let parentBytes = Data([0xB0, 1, 2, 3, 4, 5, 6, 7])

    static func keyValue(_ key: String, _ value: Opentelemetry_Proto_Common_V1_AnyValue.OneOf_Value) -> Opentelemetry_Proto_Common_V1_KeyValue {
        var pair = Opentelemetry_Proto_Common_V1_KeyValue()
        pair.key = key
        pair.value.value = value
        return pair
    }

    static func traceRequest() -> TraceRequest {
        var span = Opentelemetry_Proto_Trace_V1_Span()
        span.traceID = traceBytes
        span.spanID = spanBytes
        span.parentSpanID = parentBytes
        span.name = "GET /items"
        span.kind = .client
        span.startTimeUnixNano = 1_000
        span.endTimeUnixNano = 5_000
        span.attributes = [keyValue("http.response.status_code", .intValue(200)), keyValue("retry", .boolValue(false))]
        span.status.code = .error
        span.status.message = "timed out"
        var event = Opentelemetry_Proto_Trace_V1_Span.Event()
        event.name = "exception"
        event.timeUnixNano = 2_000
        span.events = [event]
        var broken = span
        broken.traceID = Data([1, 2, 3])
        broken.name = "broken"
        var scope = Opentelemetry_Proto_Trace_V1_ScopeSpans()
        scope.scope.name = "my.library"
        scope.spans = [span, broken]
        var resource = Opentelemetry_Proto_Trace_V1_ResourceSpans()
        resource.resource.attributes = [keyValue("service.name", .stringValue("checkout")), keyValue("service.instance.id", .stringValue("i-1"))]
        resource.scopeSpans = [scope]
        var request = TraceRequest()
        request.resourceSpans = [resource]
        return request
    }

    @Test("spans in protobuf keep their ids, kind, times, attributes, status and events; a span with a bad id is refused alone")
    func protobufTraces() throws {
        let export = try OTLPExport.decode(try Self.traceRequest().serializedData(), signal: .traces, encoding: .protobuf)
        #expect(export.rejected == 1)
        #expect(export.rejection?.contains("broken") == true)
        #expect(export.resources.count == 1)
        let resource = try #require(export.resources.first)
        #expect(resource.serviceName == "checkout" && resource.instanceID == "i-1")
        let span = try #require(resource.batch.spans.first)
        #expect(resource.batch.spans.count == 1)
        #expect(span.traceID.hex == "0102030405060708090a0b0c0d0e0f10")
        #expect(span.spanID.hex == "a001020304050607")
        #expect(span.parentSpanID?.hex == "b001020304050607")
        #expect(span.kind == .client && span.name == "GET /items")
        #expect(span.start == UnixNanos(1_000) && span.end == UnixNanos(5_000))
        #expect(span.attributes["http.response.status_code"] == .int(200))
        #expect(span.attributes["otel.scope.name"] == .string("my.library"))
        #expect(span.status == .init(code: .error, message: "timed out"))
        #expect(span.events.map(\.name) == ["exception"])
    }

    @Test("the same request in OTLP's JSON, with hexadecimal ids (either case) and 64-bit integers as strings, reads the same")
    func jsonTraces() throws {
        let json = """
            {"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"checkout"}}]},
              "scopeSpans":[{"scope":{"name":"my.library"},"spans":[
                {"traceId":"0102030405060708090A0B0C0D0E0F10","spanId":"a001020304050607","parentSpanId":"b001020304050607",
                 "name":"GET /items","kind":3,"startTimeUnixNano":"1000","endTimeUnixNano":5000,
                 "attributes":[{"key":"http.response.status_code","value":{"intValue":"200"}}],
                 "status":{"code":2,"message":"timed out"},"someFutureField":true},
                {"traceId":"","spanId":"a001020304050607","name":"no trace id","startTimeUnixNano":"1","endTimeUnixNano":"2"}]}]}]}
            """
        let export = try OTLPExport.decode(Data(json.utf8), signal: .traces, encoding: .json)
        #expect(export.rejected == 1)
        let span = try #require(export.resources.first?.batch.spans.first)
        #expect(span.traceID.hex == "0102030405060708090a0b0c0d0e0f10")
        #expect(span.spanID.hex == "a001020304050607" && span.parentSpanID?.hex == "b001020304050607")
        #expect(span.kind == .client && span.start == UnixNanos(1_000) && span.end == UnixNanos(5_000))
        #expect(span.attributes["http.response.status_code"] == .int(200))
        #expect(span.status.code == .error)
    }

    @Test("log records: severity by number or text, body as message, code attributes as the place of the call, scope as label")
    func logs() throws {
        var record = Opentelemetry_Proto_Logs_V1_LogRecord()
        record.timeUnixNano = 7_000
        record.severityNumber = .warn2
        record.body.value = .stringValue("disk almost full")
        record.attributes = [
            Self.keyValue("code.file.path", .stringValue("app.py")), Self.keyValue("code.lineno", .intValue(42)),
            Self.keyValue("code.function.name", .stringValue("check")), Self.keyValue("free", .doubleValue(0.05)),
        ]
        record.traceID = Self.traceBytes
        record.spanID = Self.spanBytes
        var textOnly = Opentelemetry_Proto_Logs_V1_LogRecord()
        textOnly.observedTimeUnixNano = 8_000
        textOnly.severityText = "ERROR"
        textOnly.body.value = .kvlistValue(.with { $0.values = [Self.keyValue("event", .stringValue("crash"))] })
        var scope = Opentelemetry_Proto_Logs_V1_ScopeLogs()
        scope.scope.name = "app.storage"
        scope.logRecords = [record, textOnly]
        var resource = Opentelemetry_Proto_Logs_V1_ResourceLogs()
        resource.scopeLogs = [scope]
        var request = LogsRequest()
        request.resourceLogs = [resource]

        let export = try OTLPExport.decode(try request.serializedData(), signal: .logs, encoding: .protobuf)
        #expect(export.rejected == 0)
        let logs = try #require(export.resources.first?.batch.logs)
        #expect(logs.count == 2)
        #expect(logs[0].severity == .warning && logs[0].message == "disk almost full" && logs[0].label == "app.storage")
        #expect(logs[0].file == "app.py" && logs[0].line == 42 && logs[0].function == "check")
        #expect(logs[0].metadata == ["free": .double(0.05)])
        #expect(logs[0].traceID?.hex == "0102030405060708090a0b0c0d0e0f10" && logs[0].spanID?.hex == "a001020304050607")
        #expect(logs[1].severity == .error && logs[1].time == UnixNanos(8_000))
        #expect(logs[1].message == "{event: \"crash\"}")
    }

    @Test("a truncated body, JSON that is not JSON, deep nesting and JSON that is not an export are errors that say so")
    func badBodies() throws {
        let whole = try Self.traceRequest().serializedData()
        #expect(throws: OTLPDecodingError.self) { try OTLPExport.decode(whole.prefix(whole.count - 3), signal: .traces, encoding: .protobuf) }
        #expect(throws: OTLPDecodingError.self) { try OTLPExport.decode(Data([0x7B, 0xFF, 0x7D]), signal: .logs, encoding: .json) }
        #expect(throws: OTLPDecodingError.self) { try OTLPExport.decode(Data("[1,2]".utf8), signal: .logs, encoding: .json) }
        var value = Opentelemetry_Proto_Common_V1_AnyValue()
        value.value = .stringValue("bottom")
        for _ in 0..<100 {
            var outer = Opentelemetry_Proto_Common_V1_AnyValue()
            outer.value = .arrayValue(.with { $0.values = [value] })
            value = outer
        }
        var request = Self.traceRequest()
        request.resourceSpans[0].scopeSpans[0].spans[0].attributes.append(.with {
            $0.key = "deep"
            $0.value = value
        })
        do {
            _ = try OTLPExport.decode(try request.serializedData(), signal: .traces, encoding: .protobuf)
            Issue.record("a value nested 100 deep was decoded")
        } catch {
            #expect((error as? OTLPDecodingError)?.reason.contains("nested") == true)
        }
    }

    @Test("the answer reports a partial success only when something was refused, in the request's encoding")
    func responses() throws {
        let partial = OTLPExport.response(signal: .traces, encoding: .protobuf, rejected: 2, message: "bad ids")
        let decoded = try Opentelemetry_Proto_Collector_Trace_V1_ExportTraceServiceResponse(serializedBytes: partial)
        #expect(decoded.partialSuccess.rejectedSpans == 2 && decoded.partialSuccess.errorMessage == "bad ids")
        #expect(OTLPExport.response(signal: .logs, encoding: .protobuf, rejected: 0, message: nil).isEmpty)
        let json = String(decoding: OTLPExport.response(signal: .logs, encoding: .json, rejected: 1, message: "x"), as: UTF8.self)
        #expect(json.contains("\"rejectedLogRecords\":\"1\""))
        #expect(OTLPEncoding(contentType: "application/json; charset=utf-8") == .json)
        #expect(OTLPEncoding(contentType: "text/plain") == nil)
    }
}
