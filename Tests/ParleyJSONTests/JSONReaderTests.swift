import Foundation
import NIOCore
import ParleyJSON
import Testing

@Suite("Strict JSON reader and skimmer")
struct JSONReaderTests {
    @Test("numbers keep their literal text, objects their member order, strings their unescaped text")
    func readsTree() throws {
        let value = try JSONValue(parsing: #" {"b": 1.10, "a": [1e400, -0, 12345678901234567890123], "s": "\u00e9\ud83d\ude00\n\/", "n": null, "t": true} "#.utf8)
        guard case .object(let members) = value else {
            Issue.record("not an object: \(value)")
            return
        }
        #expect(members.map(\.key) == ["b", "a", "s", "n", "t"])
        #expect(value["b"] == .number(JSONNumber("1.10")!))
        #expect(value["b"].flatMap { if case .number(let number) = $0 { number.text } else { nil } } == "1.10")
        #expect(value["a"]?[0].map { "\($0)" } == "1e400")
        #expect(value["a"]?[2].map { "\($0)" } == "12345678901234567890123")
        #expect(value["s"] == .string("é😀\n/"))
        #expect(value["n"] == .null)
        #expect(value["t"] == .bool(true))
        #expect(value.jsonText() == #"{"b":1.10,"a":[1e400,-0,12345678901234567890123],"s":"é😀\n/","n":null,"t":true}"#)
    }

    @Test("a value re-read from its own JSON text is equal, pretty or compact")
    func textRoundTrip() throws {
        let value = try JSONValue(parsing: #"{"x":[{"y":"q\"uote","z":[]},{}],"名前":-1.5E+3}"#.utf8)
        #expect(try JSONValue(parsing: value.jsonText().utf8) == value)
        #expect(try JSONValue(parsing: value.jsonText(pretty: true).utf8) == value)
        #expect(value.jsonText(pretty: true) == #"""
            {
              "x": [
                {
                  "y": "q\"uote",
                  "z": []
                },
                {}
              ],
              "名前": -1.5E+3
            }
            """#)
    }

    @Test("equality is by meaning: member order and number spelling do not matter, Unicode scalars do")
    func equality() throws {
        #expect(try JSONValue(parsing: #"{"a":1,"b":[1.0]}"#.utf8) == JSONValue(parsing: #"{"b":[10e-1],"a":1.000}"#.utf8))
        #expect(try JSONValue(parsing: #"{"a":1,"a":2}"#.utf8) == JSONValue(parsing: #"{"a":2}"#.utf8))
        #expect(try JSONValue(parsing: #""\u00e9""#.utf8) != JSONValue(parsing: #""e\u0301""#.utf8))
        #expect(JSONNumber("0.1") != JSONNumber("0.10000000000000001"))
        #expect(JSONNumber("-0") == JSONNumber("0.0e7"))
        #expect(JSONNumber("1e400") != JSONNumber("1e401"))
        #expect(JSONNumber("1e400")?.double == nil)
        #expect(JSONNumber("+1") == nil)
        #expect(JSONNumber("01") == nil)
        #expect(JSONNumber("1.5")?.double == 1.5)
    }

    @Test(
        "invalid documents are rejected with the offset of the offending byte",
        arguments: [
            (#"{"a":1,}"#, 7),
            (#"[1,2,]"#, 5),
            (#"{"a":01}"#, 5),
            (#"{"a":1.}"#, 5),
            (#"{"a":-}"#, 5),
            (#"{'a':1}"#, 1),
            (#"[NaN]"#, 1),
            (#"[1] // comment"#, 4),
            (#"{"a":1} {"b":2}"#, 8),
            (#"{"a" 1}"#, 5),
            (#"["\x"]"#, 2),
            (#"["\u12G4"]"#, 2),
            (#"["\ud800"]"#, 2),
            (#"["\udc00\ud800"]"#, 2),
            (#"[tru]"#, 4),
            (#"{"a":[1,2}"#, 9),
            (#"   "#, 3),
            (#"["abc"#, 5),
        ]
    )
    func rejectsInvalid(document: String, offset: Int) {
        #expect(throws: JSONError.self) { try JSONValue(parsing: document.utf8) }
        do {
            try JSONSkimmer.validate(ByteBuffer(string: document))
            Issue.record("accepted \(document)")
        } catch {
            #expect(error.offset == offset, "\(document): \(error)")
            #expect(error.description.hasPrefix("invalid JSON at byte \(offset): "))
        }
    }

    @Test("bytes that are not UTF-8 and raw control characters inside strings are rejected")
    func rejectsBadStringBytes() {
        let cases: [([UInt8], JSONError)] = [
            ([0x22, 0xC0, 0x80, 0x22], JSONError(offset: 1, reason: .invalidUTF8)),  // overlong NUL
            ([0x22, 0xED, 0xA0, 0x80, 0x22], JSONError(offset: 1, reason: .invalidUTF8)),  // encoded surrogate
            ([0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], JSONError(offset: 1, reason: .invalidUTF8)),  // above U+10FFFF
            ([0x22, 0x61, 0xE2, 0x82, 0x22], JSONError(offset: 2, reason: .invalidUTF8)),  // truncated
            ([0x22, 0x61, 0x0A, 0x22], JSONError(offset: 2, reason: .controlCharacterInString(0x0A))),
            ([0xEF, 0xBB, 0xBF, 0x7B, 0x7D], JSONError(offset: 0, reason: .unexpectedByte(0xEF, expected: "a JSON value"))),  // BOM
        ]
        for (bytes, expected) in cases {
            #expect(throws: expected) { try JSONSkimmer.validate(ByteBuffer(bytes: bytes)) }
            #expect(throws: expected) { try JSONValue(parsing: bytes) }
        }
        #expect(throws: Never.self) { try JSONSkimmer.validate(ByteBuffer(string: "\"ü€😀\"")) }
    }

    @Test("nesting up to the depth limit is read; one level more fails with a clear error")
    func depthLimit() throws {
        let limit = JSONLimits.defaultDepth
        let deepest = String(repeating: "[", count: limit) + String(repeating: "]", count: limit)
        let tooDeep = String(repeating: "[", count: limit + 1) + String(repeating: "]", count: limit + 1)
        #expect(try JSONSkimmer.validate(ByteBuffer(string: deepest)) == .array)
        #expect(throws: Never.self) { try JSONValue(parsing: deepest.utf8) }
        let expected = JSONError(offset: limit, reason: .tooDeep(limit: limit))
        #expect(throws: expected) { try JSONSkimmer.validate(ByteBuffer(string: tooDeep)) }
        #expect(throws: expected) { try JSONValue(parsing: tooDeep.utf8) }
        let member = #"{"a":"# + String(repeating: "[", count: limit) + String(repeating: "]", count: limit) + "}"
        #expect(throws: JSONError(offset: 5 + limit - 1, reason: .tooDeep(limit: limit))) {
            try JSONSkimmer.topLevelMembers(of: ByteBuffer(string: member))
        }
        #expect(expected.description == "invalid JSON at byte 512: objects and arrays nest deeper than 512 levels")
        #expect(throws: JSONError(offset: 2, reason: .tooDeep(limit: 2))) { try JSONValue(parsing: "[[[]]]".utf8, depthLimit: 2) }
    }

    @Test("the skimmer returns each top-level member's exact byte range without touching the bytes")
    func skimsMembers() throws {
        let text = #"  { "state" : {"b":1.10, "a" : [1e400]} , "action":"x\"y", "n\u00e4me": null }  "#
        var buffer = ByteBuffer(string: "prefix")
        buffer.moveReaderIndex(forwardBy: 6)
        buffer.writeString(text)
        let members = try #require(try JSONSkimmer.topLevelMembers(of: buffer))
        #expect(members.map(\.key) == ["state", "action", "näme"])
        #expect(members.map(\.kind) == [.object, .string, .null])
        let bytes = Array(text.utf8)
        let slices = members.map { String(decoding: bytes[$0.valueRange], as: UTF8.self) }
        #expect(slices == [#"{"b":1.10, "a" : [1e400]}"#, #""x\"y""#, "null"])
        #expect(try JSONSkimmer.topLevelMembers(of: ByteBuffer(string: "[1]")) == nil)
        #expect(try JSONSkimmer.topLevelMembers(of: ByteBuffer(string: "{}")) == [])
        #expect(throws: JSONError(offset: 12, reason: .trailingContent)) {
            try JSONSkimmer.topLevelMembers(of: ByteBuffer(string: #"{"a":[1,2]} x"#))
        }
    }
}
