import Foundation
import ParleyJSON
import ParleyTelemetry
import Testing

/// `LogRecord(reading:)`, parleyd's one-pass reader, against the records' own `Decodable`: the same record from the
/// same JSON, and nothing where that path refuses.
@Suite("Log records read straight from the tree")
struct LogRecordReadingTests {
    static func decodable(_ json: String) -> LogRecord? {
        guard let tree = try? JSONValue(parsing: Array(json.utf8)) else { return nil }
        return try? JSONValueDecoder().decode(LogRecord.self, from: tree)
    }

    static func direct(_ json: String) throws -> LogRecord? {
        LogRecord(reading: try JSONValue(parsing: Array(json.utf8)))
    }

    @Test("what Decodable reads, it reads the same", arguments: [
        #"{"timeUnixNano":1764288000000000001,"severity":"warning","message":"disk low"}"#,
        #"{"timeUnixNano":"1764288000000000001","severity":"info","message":"as a decimal string","label":null,"line":null}"#,
        #"{"timeUnixNano":5,"severity":"critical","message":"full","label":"app.db","source":"DB","file":"Store.swift","function":"save()","line":42,"traceId":"0AF7651916CD43DD8448EB211C80319C","spanId":"b7ad6b7169203331","droppedMetadataCount":3,"metadata":{"path":"/items/1","status":200,"ratio":0.5,"ok":true,"tags":["a",1],"nested":{"k":"v"}}}"#,
        #"{"timeUnixNano":5,"severity":"debug","message":"first","message":"the last of a repeated member","unknown":{"ignored":[1,2]}}"#,
        #"{"timeUnixNano":5,"severity":"trace","message":"","metadata":{"k":"one","k":"two"},"traceId":null,"spanId":null,"metadata":null}"#,
    ])
    func same(_ json: String) throws {
        let expected = try #require(Self.decodable(json), "the Decodable path reads it")
        #expect(try Self.direct(json) == expected)
    }

    @Test("what Decodable refuses, it does not read", arguments: [
        #"{"severity":"info","message":"no time"}"#,
        #"{"timeUnixNano":-1,"severity":"info","message":"negative time"}"#,
        #"{"timeUnixNano":5,"severity":"loud","message":"unknown level"}"#,
        #"{"timeUnixNano":5,"severity":"info"}"#,
        #"{"timeUnixNano":5,"severity":"info","message":null}"#,
        #"{"timeUnixNano":5,"severity":"info","message":"m","label":7}"#,
        #"{"timeUnixNano":5,"severity":"info","message":"m","line":-3}"#,
        #"{"timeUnixNano":5,"severity":"info","message":"m","traceId":"00000000000000000000000000000000"}"#,
        #"{"timeUnixNano":5,"severity":"info","message":"m","spanId":"xyz"}"#,
        #"{"timeUnixNano":5,"severity":"info","message":"m","metadata":{"k":null}}"#,
        #"{"timeUnixNano":5,"severity":"info","message":"m","metadata":["not","a","map"]}"#,
        #"["not a record"]"#,
    ])
    func refused(_ json: String) throws {
        #expect(Self.decodable(json) == nil, "the Decodable path refuses it")
        #expect(try Self.direct(json) == nil)
    }
}
