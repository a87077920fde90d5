import Foundation
import NIOCore
import ParleyJSON
import ParleyTelemetry
import Testing

@Suite("Log records and spans on the wire")
struct TelemetryRecordTests {
    let decoder = JSONDecoder()
    let encoder = JSONEncoder()

    @Test("a minimal log record from another language decodes with defaults; a full one survives a round trip")
    func logRecordShapes() throws {
        let minimal = try decoder.decode(LogRecord.self, from: Data(#"{"timeUnixNano":"1764288000000000001","severity":"warning","message":"disk low"}"#.utf8))
        #expect(minimal.time == UnixNanos(1_764_288_000_000_000_001))
        #expect(minimal.severity == .warning)
        #expect(minimal.label == "" && minimal.metadata.isEmpty && minimal.line == 0 && minimal.traceID == nil)

        let full = LogRecord(
            time: UnixNanos(1_764_288_000_123_456_789), severity: .critical, label: "listr.store", message: "saved",
            metadata: ["count": .int(3), "ratio": .double(0.5), "ok": .bool(true), "tags": .array([.string("a")]), "user": .map(["id": .int(7)])],
            source: "Listr", file: "Store.swift", function: "save()", line: 42, traceID: TraceID.random(), spanID: SpanID.random()
        )
        let decoded = try decoder.decode(LogRecord.self, from: try encoder.encode(full))
        #expect(decoded == full)
    }

    @Test("a span round-trips; its ids must be hexadecimal of the right length and not all zero")
    func spanShapes() throws {
        let span = SpanRecord(
            traceID: TraceID(hex: "4BF92F3577B34DA6A3CE929D0E0E4736")!, spanID: SpanID(hex: "00f067aa0ba902b7")!, parentSpanID: SpanID.random(),
            name: "GET /api/items", kind: .server, start: UnixNanos(10), end: UnixNanos(25), status: .init(code: .error, message: "boom"),
            attributes: ["http.response.status_code": .int(500)], events: [.init(name: "retry", time: UnixNanos(12))],
            links: [.init(traceID: .random(), spanID: .random())]
        )
        #expect(span.traceID.hex == "4bf92f3577b34da6a3ce929d0e0e4736")
        #expect(span.durationNanos == 15)
        #expect(try decoder.decode(SpanRecord.self, from: try encoder.encode(span)) == span)

        #expect(TraceID(hex: String(repeating: "0", count: 32)) == nil)
        #expect(TraceID(hex: "xyz") == nil)
        #expect(SpanID(hex: "00f067aa0ba902b") == nil)
        #expect(SpanID(hex: "00f067aa0ba902bg") == nil)
        let bad = #"{"traceId":"00000000000000000000000000000000","spanId":"00f067aa0ba902b7","name":"x","startTimeUnixNano":1,"endTimeUnixNano":2}"#
        #expect(throws: DecodingError.self) { try decoder.decode(SpanRecord.self, from: Data(bad.utf8)) }
    }

    @Test("severity numbers follow OpenTelemetry's ranges, and levels order by them")
    func severities() {
        #expect(LogSeverity.allCases.map(\.number) == [1, 5, 9, 10, 13, 17, 21])
        #expect(LogSeverity(number: 12) == .notice)
        #expect(LogSeverity(number: 24) == .critical)
        #expect(LogSeverity(number: 0) == nil)
        #expect(LogSeverity.debug < .info && LogSeverity.error > .warning)
    }

    @Test("attribute values: null is refused, non-finite doubles are written as strings")
    func values() throws {
        #expect(throws: DecodingError.self) { try decoder.decode(TelemetryAttributes.self, from: Data(#"{"a":null}"#.utf8)) }
        let text = String(decoding: try encoder.encode(["x": TelemetryValue.double(.infinity)] as TelemetryAttributes), as: UTF8.self)
        #expect(text == #"{"x":"inf"}"#)
    }
}

@Suite("Telemetry limits and redaction")
struct TelemetryLimitsTests {
    @Test("long texts are cut on a character boundary and end in an ellipsis")
    func cutsTexts() {
        let text = String(repeating: "é", count: 10)  // 20 bytes
        let cut = TelemetryLimits.cut(text, toBytes: 8)
        #expect(cut == "éé…")
        #expect(cut.utf8.count <= 8)
        #expect(TelemetryLimits.cut("short", toBytes: 8) == "short")
        let family = "👨‍👩‍👧" + "abc"
        #expect(TelemetryLimits.cut(family, toBytes: 10) == "…")
    }

    @Test("a record with 200 000 metadata keys keeps the first 128 in key order and counts the rest")
    func dropsAttributes() {
        var metadata = TelemetryAttributes(minimumCapacity: 200_000)
        for index in 0..<200_000 { metadata[String(format: "k%07d", index)] = .int(Int64(index)) }
        var batch = TelemetryBatch(logs: [LogRecord(time: .now, severity: .info, label: "t", message: "m", metadata: metadata)])
        let cuts = TelemetryLimits.default.apply(to: &batch)
        #expect(batch.logs[0].metadata.count == 128)
        #expect(batch.logs[0].metadata["k0000000"] == .int(0) && batch.logs[0].metadata["k0000127"] == .int(127))
        #expect(batch.logs[0].droppedMetadata == 199_872)
        #expect(cuts.itemsDropped == 199_872)
    }

    @Test("values nested deeper than the limit become an ellipsis")
    func limitsDepth() {
        var value = TelemetryValue.string("bottom")
        for _ in 0..<50 { value = .map(["deeper": value]) }
        var span = SpanRecord(traceID: .random(), spanID: .random(), name: "n", start: UnixNanos(1), end: UnixNanos(2), attributes: ["v": value])
        var cuts = TelemetryCuts()
        TelemetryLimits.default.apply(to: &span, cuts: &cuts)
        var depth = 0
        var current = span.attributes["v"]
        while case .map(let inner)? = current {
            depth += 1
            current = inner["deeper"]
        }
        #expect(depth == TelemetryLimits.default.maximumDepth - 1)
        #expect(current == .string("…"))
        #expect(cuts.itemsDropped == 1)
    }

    @Test("a batch past its size or count, or not JSON, is refused whole with a reason")
    func refusesBatches() throws {
        var limits = TelemetryLimits()
        limits.maximumBatchBytes = 100
        limits.maximumBatchRecords = 1
        #expect(throws: TelemetryBatchProblem.tooLarge(bytes: 101, limit: 100)) {
            _ = try limits.check(byteCount: 101) { TelemetryBatch() }
        }
        let two = TelemetryBatch(logs: [LogRecord(time: .now, severity: .info, label: "", message: "a"), LogRecord(time: .now, severity: .info, label: "", message: "b")])
        #expect(throws: TelemetryBatchProblem.tooManyRecords(count: 2, limit: 1)) { _ = try limits.check(byteCount: 10) { two } }
        do {
            _ = try limits.check(byteCount: 10) {
                try JSONDecoder().decode(TelemetryBatch.self, from: Data(#"{"logs":[{"severity":"info","message":"x"}]}"#.utf8))
            }
            Issue.record("a record without a time was accepted")
        } catch {
            #expect(error.description.contains("timeUnixNano"))
            #expect(error.description.contains("logs[0]"))
        }
        let invalidUTF8 = Data([0x7B, 0x22, 0x6C, 0x6F, 0x67, 0x73, 0x22, 0x3A, 0x5B, 0x22, 0xFF, 0x22, 0x5D, 0x7D])
        #expect(throws: TelemetryBatchProblem.self) { _ = try limits.check(byteCount: invalidUTF8.count) { try JSONDecoder().decode(TelemetryBatch.self, from: invalidUTF8) } }
    }

    @Test("keys that look like secrets are redacted, inside maps too; other keys are kept")
    func redacts() {
        let redaction = SecretRedaction()
        let attributes: TelemetryAttributes = [
            "Authorization": .string("Bearer abc"), "http.request.header.cookie": .array([.string("a=b")]), "api_token": .int(5),
            "user": .map(["password": .string("hunter2"), "name": .string("ann")]), "path": .string("/items"),
        ]
        let redacted = redaction.apply(to: attributes)
        #expect(redacted["Authorization"] == SecretRedaction.replacement)
        #expect(redacted["http.request.header.cookie"] == SecretRedaction.replacement)
        #expect(redacted["api_token"] == SecretRedaction.replacement)
        #expect(redacted["user"] == .map(["password": SecretRedaction.replacement, "name": .string("ann")]))
        #expect(redacted["path"] == .string("/items"))
        #expect(SecretRedaction.none.apply(to: attributes) == attributes)
        #expect(SecretRedaction(words: ["PIN"]).isSecret("card.pin"))
    }
}

@Suite("Log records and spans as parleyd reads them")
struct TelemetryTreeDecodingTests {
    @Test("a batch read through ParleyJSON's tree equals the one JSONDecoder reads, attribute values of every kind included")
    func treeAgreesWithFoundation() throws {
        let metadata: TelemetryAttributes = [
            "path": .string("/items/7 \"quoted\" ✓"), "status": .int(200), "big": .int(.min), "ratio": .double(0.5), "ok": .bool(false),
            "tags": .array([.string("a"), .int(1), .array([])]), "user": .map(["id": .int(7), "roles": .array([.string("admin")])]),
        ]
        let batch = TelemetryBatch(
            logs: [LogRecord(time: UnixNanos(1), severity: .error, label: "l", message: "m", metadata: metadata, line: 3, traceID: .random())],
            spans: [
                SpanRecord(
                    traceID: .random(), spanID: .random(), name: "GET", kind: .client, start: UnixNanos(5), end: UnixNanos(9),
                    attributes: metadata, events: [.init(name: "e", time: UnixNanos(6), attributes: ["n": .double(-1.25)])])
            ])
        let data = try JSONEncoder().encode(batch)
        let tree = try JSONValueDecoder().decode(TelemetryBatch.self, from: ByteBuffer(bytes: data))
        #expect(tree == batch)
        #expect(tree == (try JSONDecoder().decode(TelemetryBatch.self, from: data)))
    }

    @Test("through the tree an attribute is an integer when written without fraction or exponent, a double otherwise; null is refused at its path")
    func attributeKinds() throws {
        func value(_ json: String) throws -> TelemetryValue {
            try JSONValueDecoder().decode([String: TelemetryValue].self, from: ByteBuffer(string: #"{"v":\#(json)}"#))["v"]!
        }
        #expect(try value("3") == .int(3))
        #expect(try value("3.0") == .double(3))
        #expect(try value("1e2") == .double(100))
        #expect(try value("9223372036854775808") == .double(9_223_372_036_854_775_808))
        #expect(try value(#"[{"a":true}]"#) == .array([.map(["a": .bool(true)])]))
        #expect {
            try value(#"{"a":[1,null]}"#)
        } throws: { error in
            guard case .dataCorrupted(let context) = error as? DecodingError else { return false }
            return context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue } == ["v", "a", "1"]
        }
    }
}
