import Foundation
import ParleyTelemetry
import SwiftProtobuf
import Testing

@testable import ParleyOTLP

@Suite("OTLP bodies read before decoding: their messages counted, their text made valid UTF-8")
struct OTLPWireScanTests {
    /// `request`'s protobuf with each `marker` (ASCII of the same length) replaced by `bytes`: text that is not UTF-8
    /// where a Swift string cannot hold it, the lengths around it unchanged.
    static func protobuf(_ request: some SwiftProtobuf.Message, replacing marker: String, with bytes: [UInt8]) throws -> Data {
        var body = [UInt8](try request.serializedData())
        let pattern = Array(marker.utf8)
        precondition(pattern.count == bytes.count)
        var index = 0
        while index + pattern.count <= body.count {
            if Array(body[index..<index + pattern.count]) == pattern {
                body.replaceSubrange(index..<index + pattern.count, with: bytes)
                index += pattern.count
            } else {
                index += 1
            }
        }
        return Data(body)
    }

    @Test("every message of a protobuf export is counted, and only messages: ids, numbers and texts are not")
    func protobufCount() throws {
        // 1 ResourceSpans, its Resource with 2 attributes (2 KeyValue + 2 AnyValue), 1 ScopeSpans with its scope, and
        // 2 spans of 2 attributes (4 messages), a status and an event each.
        let body = try OTLPExportTests.traceRequest().serializedData()
        #expect(OTLPExport.messageCount(body, signal: .traces, encoding: .protobuf) == 1 + 1 + 4 + 1 + 1 + 2 * (1 + 4 + 1 + 1))
        // Cut short, it is counted as far as it goes, and the decoder says what is wrong.
        #expect(OTLPExport.messageCount(body.prefix(body.count - 3), signal: .traces, encoding: .protobuf) <= 22)
        #expect(OTLPExport.messageCount(Data([0xFF, 0xFF, 0xFF]), signal: .traces, encoding: .protobuf) == 0)
    }

    @Test("a million empty attributes in 2 MB are counted as the million messages they decode into")
    func emptyAttributes() throws {
        var span = Opentelemetry_Proto_Trace_V1_Span()
        span.traceID = OTLPExportTests.traceBytes
        span.spanID = OTLPExportTests.spanBytes
        // Appended to the span's bytes: field 9 (attributes), length 0, a million times; the lengths of the scope,
        // the resource and the request around it match.
        var spanBytes = try span.serializedData()
        spanBytes.append(contentsOf: [UInt8](repeating: 0, count: 2_000_000).indices.map { $0 % 2 == 0 ? UInt8(9 << 3 | 2) : 0 })
        func wrap(_ field: UInt64, _ payload: Data) -> Data {
            var out = Data()
            var value = field << 3 | 2
            out.append(UInt8(value))
            value = UInt64(payload.count)
            while value >= 0x80 {
                out.append(UInt8(value & 0x7F) | 0x80)
                value >>= 7
            }
            out.append(UInt8(value))
            return out + payload
        }
        let body = wrap(1, wrap(2, wrap(2, spanBytes)))
        #expect(body.count < 2_100_000)
        #expect(OTLPExport.messageCount(body, signal: .traces, encoding: .protobuf) == 3 + 1_000_000)
    }

    @Test("the objects of a JSON body are counted, braces inside strings not")
    func jsonCount() {
        let json = #"{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"body":{"stringValue":"a { b \" { c"}},{}]}]}]}"#
        #expect(OTLPExport.messageCount(Data(json.utf8), signal: .logs, encoding: .json) == 6)
    }

    @Test("names, keys and values that are not UTF-8 are stored with U+FFFD, ids are bytes and stay as sent")
    func invalidUTF8() throws {
        var request = OTLPExportTests.traceRequest()
        request.resourceSpans[0].scopeSpans[0].spans.removeLast()
        request.resourceSpans[0].scopeSpans[0].spans[0].name = "GET /<>"
        request.resourceSpans[0].scopeSpans[0].spans[0].attributes.append(OTLPExportTests.keyValue("k<>", .stringValue("v<>")))
        // The trace id holds bytes that are no more UTF-8 than the replacement: they must not be touched.
        request.resourceSpans[0].scopeSpans[0].spans[0].traceID = Data([0xC3, 0x28] + (3...16).map { UInt8($0) })
        let body = try Self.protobuf(request, replacing: "<>", with: [0xC3, 0x28])
        #expect(throws: BinaryDecodingError.invalidUTF8) {
            try Opentelemetry_Proto_Collector_Trace_V1_ExportTraceServiceRequest(serializedBytes: body)
        }
        let export = try OTLPExport.decode(body, signal: .traces, encoding: .protobuf)
        #expect(export.textsRepaired == 3)
        let span = try #require(export.resources.first?.batch.spans.first)
        #expect(span.name == "GET /\u{FFFD}(")
        #expect(span.attributes["k\u{FFFD}("] == .string("v\u{FFFD}("))
        #expect(span.traceID.hex == "c328030405060708090a0b0c0d0e0f10")
    }

    @Test("a log record's body and severity text that are not UTF-8, and JSON that is not, are repaired alike")
    func invalidUTF8InLogs() throws {
        var record = Opentelemetry_Proto_Logs_V1_LogRecord()
        record.timeUnixNano = 1
        record.body.value = .stringValue("disk <> full")
        record.severityText = "WARN<>"
        var request = OTLPExportTests.LogsRequest()
        request.resourceLogs = [.with { $0.scopeLogs = [.with { $0.logRecords = [record] }] }]
        let export = try OTLPExport.decode(try Self.protobuf(request, replacing: "<>", with: [0xFF, 0xFE]), signal: .logs, encoding: .protobuf)
        #expect(export.textsRepaired == 2)
        #expect(export.resources.first?.batch.logs.first?.message == "disk \u{FFFD}\u{FFFD} full")

        let json = Data(#"{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"timeUnixNano":"1","body":{"stringValue":"a"#.utf8) + Data([0xFF])
            + Data(#"b"}}]}]}]}"#.utf8)
        let fromJSON = try OTLPExport.decode(json, signal: .logs, encoding: .json)
        #expect(fromJSON.textsRepaired == 1 && fromJSON.resources.first?.batch.logs.first?.message == "a\u{FFFD}b")
    }

    @Test("values nested 10 000 deep are counted without recursing past the decoder's depth limit, and refused")
    func deepNesting() throws {
        // AnyValue{kvlist: KeyValueList{values: KeyValue{key, value: AnyValue{…}}}}, built inside out as bytes.
        var value = Data([0x0A, 0x01, 0x78])  // AnyValue{string_value: "x"}
        func wrap(_ field: UInt8, _ payload: Data) -> Data {
            var out = Data([field << 3 | 2])
            var length = payload.count
            while length >= 0x80 {
                out.append(UInt8(length & 0x7F) | 0x80)
                length >>= 7
            }
            out.append(UInt8(length))
            return out + payload
        }
        for _ in 0..<10_000 { value = wrap(6, wrap(1, Data([0x0A, 0x01, 0x6B]) + wrap(2, value))) }
        let span = Data([0x0A, 0x10] + (1...16).map { UInt8($0) }) + Data([0x12, 0x08] + (1...8).map { UInt8($0) })
            + wrap(9, Data([0x0A, 0x01, 0x6B]) + wrap(2, value))
        let body = wrap(1, wrap(2, wrap(2, span)))
        let count = OTLPExport.messageCount(body, signal: .traces, encoding: .protobuf)
        #expect(count > 0 && count < 100)
        #expect(OTLPWireScan.replacingInvalidUTF8(protobuf: body, signal: .traces) == nil)
        do {
            _ = try OTLPExport.decode(body, signal: .traces, encoding: .protobuf)
            Issue.record("values nested 10 000 deep were decoded")
        } catch {
            #expect(error.reason.contains("nested more than 64"))
        }
    }
}
