import Foundation
import ParleyTelemetry
import SwiftProtobuf
import Testing

@testable import ParleyOTLP

@Suite("Parley's records made into OTLP export requests")
struct OTLPExportRequestTests {
    static let trace = TraceID(hex: "5b8efff798038103d269b633813fc60c")!
    static let root = SpanID(hex: "eee19b7ec3c1b174")!
    static let child = SpanID(hex: "0af7651916cd43dd")!

    static let spans: [SpanRecord] = [
        SpanRecord(
            traceID: trace, spanID: child, parentSpanID: root, name: "SELECT items", kind: .client, start: UnixNanos(1_764_288_000_100_000_000),
            end: UnixNanos(1_764_288_000_130_000_000), status: .init(code: .error, message: "timed out"),
            attributes: [
                "db.system": .string("sqlite"), "rows": .int(3), "ratio": .double(0.5), "cached": .bool(false),
                "tags": .array([.string("a"), .int(1)]), "query": .map(["table": .string("items"), "limit": .int(10)]),
                "otel.scope.name": .string("listr.store"),
            ],
            events: [.init(name: "exception", time: UnixNanos(1_764_288_000_120_000_000), attributes: ["exception.message": .string("boom")])],
            links: [.init(traceID: TraceID(hex: "0102030405060708090a0b0c0d0e0f10")!, spanID: SpanID(hex: "1112131415161718")!, attributes: ["why": .string("retry")])],
            droppedAttributes: 2, droppedEvents: 1, droppedLinks: 3
        ),
        SpanRecord(
            traceID: trace, spanID: root, name: "GET /items", kind: .server, start: UnixNanos(1_764_288_000_000_000_000),
            end: UnixNanos(1_764_288_000_200_000_000), status: .init(code: .ok)
        ),
    ]

    static let logs: [LogRecord] = LogSeverity.allCases.enumerated().map { index, severity in
        LogRecord(
            time: UnixNanos(1_764_288_000_000_000_000 + UInt64(index)), severity: severity, label: index.isMultiple(of: 2) ? "listr.store" : "listr.net",
            message: "line \(index)", metadata: ["count": .int(Int64(index)), "path": .string("/items")], source: "Listr", file: "Listr/Store.swift",
            function: "save()", line: UInt(40 + index), traceID: index == 0 ? trace : nil, spanID: index == 0 ? root : nil, droppedMetadata: index
        )
    }

    static let resource: TelemetryAttributes = ["service.name": .string("Listr"), "service.instance.id": .string("6f1c0a2b")]

    @Test("spans made into a request and read back by parleyd's receiver are the same spans: ids, parent, kind, times, status, nested attributes, events, links, dropped counts, scope")
    func spansRoundTrip() throws {
        let body = try OTLPExportRequest.encode([.init(attributes: Self.resource, batch: TelemetryBatch(spans: Self.spans))], signal: .traces)
        let export = try OTLPExport.decode(body, signal: .traces, encoding: .protobuf)
        #expect(export.rejected == 0)
        #expect(export.resources.count == 1)
        #expect(export.resources.first?.attributes == Self.resource)
        #expect(export.resources.first?.batch.spans.sorted { $0.name < $1.name } == Self.spans.sorted { $0.name < $1.name })
    }

    @Test("log records made into a request and read back are the same records: every level, label, metadata, module, place of the call, ids, dropped count")
    func logsRoundTrip() throws {
        let body = try OTLPExportRequest.encode([.init(attributes: Self.resource, batch: TelemetryBatch(logs: Self.logs))], signal: .logs)
        let export = try OTLPExport.decode(body, signal: .logs, encoding: .protobuf)
        #expect(export.rejected == 0)
        #expect(export.resources.first?.attributes == Self.resource)
        #expect(export.resources.first?.batch.logs.sorted { $0.time < $1.time } == Self.logs)
    }

    @Test("records go under their scope (a log record's label, a span's otel.scope.name), scopes in the order first seen; a resource with none of the signal is left out")
    func scopesAndResources() throws {
        let resources: [OTLPExportRequest.Resource] = [
            .init(attributes: Self.resource, batch: TelemetryBatch(logs: Self.logs, spans: Self.spans)),
            .init(attributes: ["service.name": .string("quiet")], batch: TelemetryBatch(logs: Self.logs)),
        ]
        let logs = try Opentelemetry_Proto_Collector_Logs_V1_ExportLogsServiceRequest(serializedBytes: try OTLPExportRequest.encode(resources, signal: .logs))
        #expect(logs.resourceLogs.count == 2)
        #expect(logs.resourceLogs[0].scopeLogs.map(\.scope.name) == ["listr.store", "listr.net"])
        #expect(logs.resourceLogs[0].scopeLogs.map(\.logRecords.count) == [4, 3])
        let first = try #require(logs.resourceLogs[0].scopeLogs.first?.logRecords.first)
        #expect(first.severityNumber == .trace && first.severityText == "TRACE")
        #expect(first.attributes.map(\.key) == ["code.file.path", "code.function.name", "code.line.number", "code.namespace", "count", "path"])

        let traces = try Opentelemetry_Proto_Collector_Trace_V1_ExportTraceServiceRequest(serializedBytes: try OTLPExportRequest.encode(resources, signal: .traces))
        #expect(traces.resourceSpans.count == 1)
        #expect(traces.resourceSpans[0].scopeSpans.map(\.scope.name) == ["listr.store", ""])
        #expect(traces.resourceSpans[0].scopeSpans[0].spans[0].attributes.contains { $0.key == "otel.scope.name" } == false)
    }

    @Test("a receiver's partial success is read from its protobuf answer; an answer without one is nothing refused")
    func partialSuccess() {
        let answer = OTLPExport.response(signal: .traces, encoding: .protobuf, rejected: 3, message: "span ids of the wrong length")
        #expect(OTLPExportRequest.partialSuccess(ofResponse: answer, signal: .traces) == (3, "span ids of the wrong length"))
        let logs = OTLPExport.response(signal: .logs, encoding: .protobuf, rejected: 1, message: nil)
        #expect(OTLPExportRequest.partialSuccess(ofResponse: logs, signal: .logs) == (1, nil))
        #expect(OTLPExportRequest.partialSuccess(ofResponse: Data(), signal: .logs) == (0, nil))
    }
}
