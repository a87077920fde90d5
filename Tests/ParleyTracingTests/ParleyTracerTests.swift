import Logging
import ParleyRemoteDebugger
import ParleyTelemetry
import ParleyTracing
import Testing
import Tracing

/// The tracer against an exporter that is never started: the spans it queues are what would leave the app.
@Suite("ParleyTracer")
struct ParleyTracerTests {
    @Test("a child span joins its parent's trace with the parent's span id; a span with no current span starts a trace")
    func parentAndChild() throws {
        let (tracer, exporter) = makeTracer()
        tracer.withSpan("parent", ofKind: .server) { _ in
            tracer.withSpan("child") { _ in }
        }
        tracer.withSpan("another root") { _ in }
        let spans = exporter.spans
        try #require(spans.map(\.name) == ["child", "parent", "another root"])
        let (child, parent, root) = (spans[0], spans[1], spans[2])
        #expect(parent.parentSpanID == nil)
        #expect(parent.kind == .server)
        #expect(child.traceID == parent.traceID)
        #expect(child.parentSpanID == parent.spanID)
        #expect(child.spanID != parent.spanID)
        #expect(child.kind == .internal)
        #expect(root.parentSpanID == nil)
        #expect(root.traceID != parent.traceID)
        #expect(parent.start <= child.start && child.end <= parent.end)
    }

    @Test("inject writes traceparent (version 00, trace, span, flags 01) and tracestate; extract reads them back as the remote parent of the next span")
    func injectExtractRoundTrip() throws {
        let (tracer, exporter) = makeTracer()
        var incoming = ServiceContext.topLevel
        tracer.extract(
            ["traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "tracestate": "vendor=abc,other=1"], into: &incoming,
            using: DictionaryExtractor()
        )
        var headers: [String: String] = [:]
        let span = tracer.startSpan("GET /items", context: incoming, ofKind: .server)
        tracer.inject(span.context, into: &headers, using: DictionaryInjector())
        span.end()

        let record = try #require(exporter.spans.first)
        #expect(record.traceID.hex == "4bf92f3577b34da6a3ce929d0e0e4736")
        #expect(record.parentSpanID?.hex == "00f067aa0ba902b7")
        #expect(headers["traceparent"] == "00-4bf92f3577b34da6a3ce929d0e0e4736-\(record.spanID.hex)-01")
        #expect(headers["tracestate"] == "vendor=abc,other=1")

        // The other side of the hop reads it back as this span.
        var next = ServiceContext.topLevel
        tracer.extract(headers, into: &next, using: DictionaryExtractor())
        #expect(next.parleyTraceContext == TraceContext(traceID: record.traceID, spanID: record.spanID, traceState: "vendor=abc,other=1", isRemote: true))
    }

    @Test("a malformed traceparent is ignored: the context is left as it was, and the next span starts a trace of its own")
    func malformedTraceparent() throws {
        let valid = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        let malformed = [
            "", "00", "garbage", String(valid.dropLast()), valid + "0", valid + "-extra",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  // version ff is forbidden
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",  // upper case
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",  // all-zero trace id
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",  // all-zero parent id
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g", "00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01",
            "0x-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "00-4bf92f3577b34da6a3ce929d0e0e47é-00f067aa0ba902b7-01",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x", String(repeating: "0-", count: 500_000),
        ]
        let (tracer, exporter) = makeTracer()
        for header in malformed {
            var context = ServiceContext.topLevel
            tracer.extract(["traceparent": header, "tracestate": "a=b"], into: &context, using: DictionaryExtractor())
            #expect(context.parleyTraceContext == nil, "\(header.prefix(80))")
            tracer.startSpan("after \(header.prefix(10))", context: context).end()
        }
        #expect(exporter.spans.count == malformed.count)
        #expect(exporter.spans.allSatisfy { $0.parentSpanID == nil })
        #expect(exporter.spans.allSatisfy { $0.traceID.hex != "4bf92f3577b34da6a3ce929d0e0e4736" })
    }

    @Test("spaces around traceparent are ignored, a later version may add fields, and an unprintable or long tracestate is dropped but the trace kept")
    func lenientTraceparent() throws {
        let trace = "4bf92f3577b34da6a3ce929d0e0e4736"
        #expect(TraceContext(traceparent: " \t00-\(trace)-00f067aa0ba902b7-00 ")?.flags == 0)
        #expect(TraceContext(traceparent: "cc-\(trace)-00f067aa0ba902b7-01-what-the-future-holds")?.traceID.hex == trace)
        #expect(TraceContext(traceparent: "cc-\(trace)-00f067aa0ba902b7-01")?.traceID.hex == trace)
        let kept = TraceContext(traceparent: "00-\(trace)-00f067aa0ba902b7-01", tracestate: "  a=1,b=2 ")
        #expect(kept?.traceState == "a=1,b=2")
        #expect(TraceContext(traceparent: "00-\(trace)-00f067aa0ba902b7-01", tracestate: "a=\u{1b}[31m")?.traceState == nil)
        #expect(TraceContext(traceparent: "00-\(trace)-00f067aa0ba902b7-01", tracestate: String(repeating: "a", count: 513))?.traceState == nil)
        #expect(TraceContext(traceparent: "00-\(trace)-00f067aa0ba902b7-01", tracestate: "")?.traceState == nil)
    }

    @Test("recordError adds an exception event with exception.type and exception.message; withSpan marks a thrown error's span as failed")
    func recordError() throws {
        struct SaveFailed: Error, CustomStringConvertible { var description: String { "disk full" } }
        let (tracer, exporter) = makeTracer()
        #expect(throws: SaveFailed.self) {
            try tracer.withSpan("save") { _ in throw SaveFailed() }
        }
        let span = try #require(exporter.spans.first)
        #expect(span.status.code == .error)
        let event = try #require(span.events.first)
        #expect(event.name == "exception")
        #expect(event.attributes["exception.message"] == .string("disk full"))
        #expect(event.attributes["exception.type"]?.description.hasSuffix("SaveFailed") == true)
        #expect(event.time >= span.start && event.time <= span.end)
    }

    @Test("attributes keep their types (integers, doubles, booleans, strings, arrays of them, also as stringConvertible); anything else is its description")
    func attributeConversion() throws {
        let (tracer, exporter) = makeTracer()
        let span = tracer.startSpan("convert")
        span.updateAttributes { attributes in
            attributes["int"] = 42
            attributes["int32"] = SpanAttribute.int32(-7)
            attributes["double"] = 2.5
            attributes["bool"] = true
            attributes["string"] = "text"
            attributes["ints"] = [1, 2]
            attributes["doubles"] = SpanAttribute.doubleArray([0.5])
            attributes["bools"] = SpanAttribute.boolArray([true, false])
            attributes["strings"] = ["a", "b"]
            attributes["convertible"] = SpanAttribute.stringConvertible(Version(major: 1, minor: 2))
            attributes["convertibles"] = SpanAttribute.stringConvertibleArray([Version(major: 3, minor: 4), 5, true])
        }
        span.end()
        let attributes = try #require(exporter.spans.first).attributes
        let expected: TelemetryAttributes = [
            "int": .int(42), "int32": .int(-7), "double": .double(2.5), "bool": .bool(true), "string": .string("text"),
            "ints": .array([.int(1), .int(2)]), "doubles": .array([.double(0.5)]), "bools": .array([.bool(true), .bool(false)]),
            "strings": .array([.string("a"), .string("b")]), "convertible": .string("1.2"), "convertibles": .array([.string("3.4"), .int(5), .bool(true)]),
        ]
        #expect(attributes == expected)
    }

    @Test("secret-looking attributes of the span, its events and links are redacted when it ends")
    func redaction() throws {
        let (tracer, exporter) = makeTracer()
        let other = tracer.startSpan("other")
        let span = tracer.startSpan("GET /me", ofKind: .client)
        span.attributes["http.request.header.authorization"] = "Bearer abc"
        span.attributes["url.full"] = "http://host/me"
        span.addEvent(SpanEvent(name: "retry", attributes: ["cookie": "id=1", "attempt": 2]))
        span.addLink(other, attributes: ["client_secret": "s"])
        span.end()
        other.end()
        let record = try #require(exporter.spans.first)
        #expect(record.attributes["http.request.header.authorization"] == SecretRedaction.replacement)
        #expect(record.attributes["url.full"] == .string("http://host/me"))
        #expect(record.events.first?.attributes == ["cookie": SecretRedaction.replacement, "attempt": .int(2)])
        #expect(record.links.first?.attributes == ["client_secret": SecretRedaction.replacement])
        #expect(record.links.first?.spanID == other.traceContext.spanID)
    }

    @Test("status, events and links are recorded; ok stays ok; a link to another tracer's span is counted as dropped; after end nothing changes")
    func statusEventsLinks() throws {
        let (tracer, exporter) = makeTracer()
        let span = tracer.startSpan("work")
        span.setStatus(SpanStatus(code: .error, message: "first"))
        span.setStatus(SpanStatus(code: .ok))
        span.setStatus(SpanStatus(code: .error, message: "too late"))
        span.addEvent("checkpoint")
        span.addLink(SpanLink(context: .topLevel, attributes: [:]))
        span.end()
        span.attributes["after"] = "end"
        span.operationName = "renamed"
        span.end()
        #expect(!span.isRecording)
        let records = exporter.spans
        try #require(records.count == 1)
        #expect(records[0].name == "work")
        #expect(records[0].status == .init(code: .ok))
        #expect(records[0].events.map(\.name) == ["checkpoint"])
        #expect(records[0].links.isEmpty && records[0].droppedLinks == 1)
        #expect(records[0].attributes.isEmpty)
    }

    @Test("a span renamed while it runs (as Hummingbird names a route's span) is recorded under its last name, with the error status and its message")
    func renamedFailedSpan() throws {
        let (tracer, exporter) = makeTracer()
        let span = tracer.startSpan("HTTP GET route not found", ofKind: .server)
        span.operationName = "/items/{id}"
        span.setStatus(SpanStatus(code: .error, message: "database unreachable"))
        span.end()
        let record = try #require(exporter.spans.first)
        #expect(record.name == "/items/{id}")
        #expect(record.status == .init(code: .error, message: "database unreachable"))
    }
}

// MARK: - Support

private struct Version: CustomStringConvertible, Sendable {
    var major: Int
    var minor: Int
    var description: String { "\(major).\(minor)" }
}

/// A tracer and the exporter whose queue holds what it would send (never started).
func makeTracer() -> (ParleyTracer, TelemetryExporter) {
    let exporter = TelemetryExporter(
        configuration: .init(
            appName: "idle", destination: .debugger(.endpoint(host: "127.0.0.1", port: 9)), identity: .ephemeral, trust: .anyOpen,
            logger: Logger(label: "quiet") { _ in SwiftLogNoOpLogHandler() }
        )
    )
    return (ParleyTracer(exporter: exporter), exporter)
}

extension TelemetryExporter {
    var spans: [SpanRecord] {
        queuedItems.compactMap { if case .span(let span) = $0 { span } else { nil } }
    }
}

struct DictionaryExtractor: Extractor {
    func extract(key: String, from carrier: [String: String]) -> String? { carrier[key] }
}

struct DictionaryInjector: Injector {
    func inject(_ value: String, forKey key: String, into carrier: inout [String: String]) { carrier[key] = value }
}
