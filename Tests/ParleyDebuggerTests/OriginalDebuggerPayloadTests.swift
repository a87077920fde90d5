import Foundation
import NIOCore
import ParleyDebugger
import ParleyJSON
import Testing

@Suite("Original debugger payload")
struct OriginalDebuggerPayloadTests {
    static let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 0x0D, 0xFF]

    @Test("the state is the exact byte slice the app sent: key order, number text, escapes and Unicode untouched")
    func keepsStateBytes() throws {
        let state = #"{"zeta": 1.10, "alpha":[1e400, -0.0], "名前" : "\u00fc and ü", "nested":{"b":null,"a":true}}"#
        let imageData = Data(Self.png).base64EncodedString().replacingOccurrences(of: "/", with: #"\/"#)
        let body = ByteBuffer(string: #"{"state": "# + state + #", "action":"add(\"milk\")","imageData":""# + imageData + #""}"#)
        let record = try OriginalDebuggerPayload.record(from: body)
        #expect(String(buffer: record.state) == state)
        #expect(record.action == #"add("milk")"#)
        #expect(Array(record.screenshot.readableBytesView) == Self.png)
    }

    @Test("a missing, null or empty imageData gives a record without a screenshot")
    func noImage() throws {
        for image in ["", #","imageData":null"#, #","imageData":"""#] {
            let record = try OriginalDebuggerPayload.record(from: ByteBuffer(string: #"{"state":[1],"action":"a""# + image + "}"))
            #expect(record.screenshot.readableBytes == 0)
            #expect(String(buffer: record.state) == "[1]")
        }
    }

    @Test("a missing or ill-typed field is rejected with an error naming the field")
    func badFields() {
        let cases: [(String, OriginalDebuggerPayloadError)] = [
            (#"{"action":"a","imageData":""}"#, .missingField(.state)),
            (#"{"state":{}}"#, .missingField(.action)),
            (#"{"state":{},"action":7}"#, .wrongType(.action, found: .number)),
            (#"{"state":{},"action":null}"#, .wrongType(.action, found: .null)),
            (#"{"state":{},"action":"a","imageData":[1]}"#, .wrongType(.imageData, found: .array)),
            (#"{"state":{},"state":{},"action":"a"}"#, .duplicateField(.state)),
            (#"{"state":{},"action":"a","imageData":"iVBO!w=="}"#, .invalidImageData(.invalidCharacter(offset: 4, byte: 0x21))),
            (#"{"state":{},"action":"a","imageData":"iVBORw="}"#, .invalidImageData(.badPadding)),
            (#"["state"]"#, .notAnObject(.array)),
        ]
        for (body, expected) in cases {
            #expect(throws: expected, "\(body)") { try OriginalDebuggerPayload.record(from: ByteBuffer(string: body)) }
        }
        #expect(OriginalDebuggerPayloadError.missingField(.state).description == #"the debugger payload has no "state" member"#)
        #expect(OriginalDebuggerPayloadError.wrongType(.action, found: .number).description.contains("must be a string"))
    }

    @Test("a state that is not JSON is rejected with the offset where it goes wrong")
    func stateNotJSON() {
        #expect(throws: OriginalDebuggerPayloadError.invalidJSON(JSONError(offset: 11, reason: .unexpectedByte(UInt8(ascii: "1"), expected: "a member name (a string in double quotes)")))) {
            try OriginalDebuggerPayload.record(from: ByteBuffer(string: #"{"state": {1, count: 2}, "action": "a"}"#))
        }
        #expect(throws: OriginalDebuggerPayloadError.self) {
            try OriginalDebuggerPayload.record(from: ByteBuffer(string: #"{"state": undefined, "action": "a"}"#))
        }
        #expect(throws: OriginalDebuggerPayloadError.self) {
            try OriginalDebuggerPayload.record(from: ByteBuffer(string: #"{"state": {"a":1}, "action": "a""#))
        }
    }

    @Test("a body written for a record reads back as the same record")
    func bodyRoundTrip() throws {
        let record = StateRecord(action: "tap \"ok\" ✓", state: ByteBuffer(string: #"{"n":1.10}"#), screenshot: ByteBuffer(bytes: Self.png))
        let body = OriginalDebuggerPayload.body(for: record)
        #expect(try OriginalDebuggerPayload.record(from: body) == record)
        // What the original app decodes it with must accept it too.
        let object = try JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any]
        #expect(object?["imageData"] as? String == Data(Self.png).base64EncodedString())
        let bare = StateRecord(action: "a", state: ByteBuffer(string: "[]"))
        #expect(String(buffer: OriginalDebuggerPayload.body(for: bare)) == #"{"state":[],"action":"a"}"#)
    }
}

@Suite("Base64")
struct Base64Tests {
    @Test("encoding matches Foundation's for every length mod 3, and decoding inverts it with or without padding")
    func roundTrip() throws {
        for length in 0..<40 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            let encoded = Base64.encode(ByteBuffer(bytes: bytes))
            #expect(encoded == Data(bytes).base64EncodedString())
            #expect(Array(try Base64.decode(encoded).readableBytesView) == bytes)
            let unpadded = encoded.replacingOccurrences(of: "=", with: "")
            #expect(Array(try Base64.decode(unpadded).readableBytesView) == bytes)
        }
    }

    @Test("text outside the alphabet, impossible lengths and bad padding are rejected")
    func rejects() {
        #expect(throws: Base64Error.invalidCharacter(offset: 2, byte: 0x20)) { try Base64.decode("QU JDQ==") }
        #expect(throws: Base64Error.badLength(5)) { try Base64.decode("QUJDR") }
        #expect(throws: Base64Error.invalidCharacter(offset: 3, byte: UInt8(ascii: "="))) { try Base64.decode("QUJ=QUJD") }
        #expect(throws: Base64Error.badPadding) { try Base64.decode("QR==") }
        #expect(throws: Base64Error.invalidCharacter(offset: 1, byte: UInt8(ascii: "="))) { try Base64.decode("Q===") }
    }
}
