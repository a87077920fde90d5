import Foundation
import ParleyDebugger
import ParleyJSON
@testable import ParleyHistory
import ParleyTelemetry
import Testing

@Suite("History: how log records and spans are written")
struct TelemetryRowsTests {
    @Test("metadata is written as JSON with sorted keys that reads back as the same values: doubles stay doubles, text is escaped, NaN is a string")
    func attributesText() {
        let attributes: TelemetryAttributes = [
            "z": .double(2), "a": .string("line\nbreak \"q\" \\ \u{1B}[31m ✓ /path"), "m": .map(["b": .int(-1), "a": .array([.bool(true), .double(1e-7)])]),
            "n": .double(.nan),
        ]
        let text = TelemetryRows.json(attributes)
        #expect(text.hasPrefix(#"{"a":"line\nbreak \"q\" \\ \u001b[31m ✓ /path","m":{"a":[true,1e-07],"b":-1},"n":"nan","z":2.0}"#))
        var expected = attributes
        expected["n"] = .string("nan")
        #expect(TelemetryRows.decode(text, JSONValueDecoder()) == expected)
        #expect(TelemetryRows.json([:]) == "")
    }
}

@Suite("History: rows stored several to a statement")
struct RowInserterTests {
    @Test("batches of every size around a statement's rows come back whole, in order, numbered consecutively, and found by their words")
    func batchSizes() async throws {
        try await withStore { store, _ in
            let session = try await store.beginSession(peerID: "cccc-3", appName: "Sizes", kind: .parley, at: testTime(0))
            let perStatement = RowInserter.rowsPerStatement
            var all: [StoredLogRecord] = []
            for size in [1, perStatement - 1, perStatement, perStatement + 1, 2 * perStatement, 2 * perStatement + 5] {
                let records = (0..<size).map { log(Double(all.count + $0), label: "size.\(size)", "record \($0) of batch\(size)") }
                let spans = (0..<size).map { span(Double($0), name: "op \($0) of \(size)") }
                let stored = try await store.appendTelemetry(TelemetryBatch(logs: records, spans: spans), to: session.id, at: testTime(1))
                #expect(stored.logs.map(\.record) == records)
                #expect(stored.spans.map(\.span) == spans)
                let ids = stored.logs.map(\.id)
                #expect(ids == Array(ids[0]...(ids[0] + Int64(size) - 1)), "batch of \(size)")
                // Read back from the table: each id holds its own record, the last statement's rows included.
                for item in [stored.logs.first!, stored.logs.last!] { #expect(try await store.logRecord(item.id) == item) }
                all += stored.logs
            }
            #expect(try await store.logs(LogQuery(session: session.id, limit: 1_000)).items == all)
            let last = try await store.logs(LogQuery(session: session.id, text: "batch\(2 * perStatement + 5)")).items
            #expect(last.count == 2 * perStatement + 5)
            let spans = try await store.spans(session: session.id, limit: 1_000).items
            #expect(spans.count == 1 + (perStatement - 1) + perStatement + (perStatement + 1) + 2 * perStatement + (2 * perStatement + 5))
        }
    }
}
