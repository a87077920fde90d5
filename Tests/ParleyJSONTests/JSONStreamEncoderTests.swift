import Foundation
import NIOCore
import ParleyJSON
import Testing

/// The streaming encoder is held to Foundation's `JSONEncoder` (with `.withoutEscapingSlashes`, as Parley's typed
/// messages are encoded): the same JSON, compared as values (member order aside), for every shape of value; and
/// where it cannot stream a value, it refuses it whole and leaves the buffer as it was.
@Suite("Streaming JSON encoder")
struct JSONStreamEncoderTests {
    static let foundation = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .withoutEscapingSlashes
        return encoder
    }()

    /// The stream encoder's output, after a prefix it must leave alone.
    func streamed(_ value: some Encodable) throws -> ByteBuffer {
        var buffer = ByteBuffer(string: "prefix")
        try JSONStreamEncoder().encode(value, into: &buffer)
        #expect(buffer.readString(length: 6) == "prefix")
        return buffer
    }

    /// Both encoders' JSON, each parsed by the strict reader.
    func both(_ value: some Encodable) throws -> (stream: JSONValue, foundation: JSONValue, text: String) {
        let buffer = try streamed(value)
        let text = String(buffer: buffer)
        return (try JSONValue(parsing: buffer), try JSONValue(parsing: Self.foundation.encode(value)), text)
    }

    func expectSameAsFoundation(_ value: some Encodable, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let (stream, foundation, text) = try both(value)
        #expect(stream == foundation, "streamed \(text), JSONEncoder \(foundation)", sourceLocation: sourceLocation)
    }

    func expectRefused(_ value: some Encodable, sourceLocation: SourceLocation = #_sourceLocation) {
        var buffer = ByteBuffer(string: "kept")
        #expect(throws: JSONStreamEncoderUnsupported.self, sourceLocation: sourceLocation) {
            try JSONStreamEncoder().encode(value, into: &buffer)
        }
        #expect(String(buffer: buffer) == "kept", sourceLocation: sourceLocation)
    }

    struct Todo: Codable, Equatable {
        var id: Int
        var title: String
        var tags: [String]
        var done: Bool
        var note: String?
        var due: Date?
    }

    enum Shape: Codable, Equatable {
        case circle(radius: Double)
        case rectangle(width: Int, height: Int)
        case nothing
    }

    enum Colour: String, Codable { case red, green }
    enum Rank: Int, Codable { case low = 1, high = 9 }

    struct Everything: Codable, Equatable {
        var int8: Int8 = -128
        var int16: Int16 = 32767
        var int32: Int32 = -7
        var int64: Int64 = .min
        var uint: UInt = 7
        var uint8: UInt8 = 255
        var uint16: UInt16 = 1
        var uint32: UInt32 = .max
        var uint64: UInt64 = .max
        var float: Float = 0.1
        var doubles: [Double] = [0.1, 1.0, -0.0, 1e300, .leastNonzeroMagnitude, 123456789.125, -2.5e-8]
        var data = Data([0, 1, 2, 250, 255])
        var url = URL(string: "https://example.com/a/b?c=d#e")!
        var decimal = Decimal(string: "12345.6789")!
        var uuid = UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!
        var date = Date(timeIntervalSinceReferenceDate: 123.5)
        var colour = Colour.green
        var rank = Rank.high
        var shapes: [Shape] = [.circle(radius: 2.5), .rectangle(width: 3, height: 4), .nothing]
        var byName: [String: Int] = ["one": 1, "two": 2]
        var byNumber: [Int: String] = [1: "one", 20: "twenty"]
        var byUUID: [UUID: Bool] = [UUID(uuidString: "00000000-0000-0000-0000-000000000001")!: true]
        var nested: [[Int]] = [[], [1], [2, 3]]
        var optionals: [Int?] = [1, nil, 3]
        var empty: [String] = []
        var emptyObject: [String: Int] = [:]
        var todo = Todo(id: 1, title: "a", tags: [], done: true, note: nil, due: nil)
    }

    @Test("a plain struct: the same members and values as JSONEncoder, absent optionals left out")
    func plainStruct() throws {
        try expectSameAsFoundation(Todo(id: 42, title: "Buy oat milk", tags: ["groceries", "weekend"], done: false, note: nil, due: nil))
        try expectSameAsFoundation(
            Todo(id: -1, title: "", tags: [""], done: true, note: "n", due: Date(timeIntervalSinceReferenceDate: 0.25)))
        let (_, _, text) = try both(Todo(id: 1, title: "t", tags: ["x"], done: false, note: nil, due: nil))
        // In the order encoded, without spaces.
        #expect(text == #"{"id":1,"title":"t","tags":["x"],"done":false}"#)
    }

    @Test("every standard type: integers at their limits, floats as JSONEncoder writes them, Data as Base64, URL and UUID as strings, Decimal as a number")
    func everyType() throws {
        try expectSameAsFoundation(Everything())
        // Numbers compared as text, not only as values: 1.0 is written 1, as JSONEncoder writes it.
        let (_, _, text) = try both([1.0, 0.1, 1e300, -0.0])
        #expect(text == String(decoding: try Self.foundation.encode([1.0, 0.1, 1e300, -0.0]), as: UTF8.self))
        let decoded = try JSONDecoder().decode(Everything.self, from: Data(try streamed(Everything()).readableBytesView))
        #expect(decoded == Everything())
    }

    @Test("strings: quotes, backslashes and control characters escaped; slashes and non-ASCII text as they are")
    func strings() throws {
        let texts = ["plain", "quote \" and \\ backslash", "line\nbreak\r\ttab", "\u{01}\u{08}\u{0C}\u{1F}", "a/b", "é😀 ünï", ""]
        for text in texts { try expectSameAsFoundation(text) }
        try expectSameAsFoundation(["key \"quoted\"\n": texts])
        let (_, _, text) = try both("a/b é")
        #expect(text == "\"a/b é\"")
    }

    @Test("top-level fragments and containers")
    func fragments() throws {
        try expectSameAsFoundation(5)
        try expectSameAsFoundation(true)
        try expectSameAsFoundation("text")
        try expectSameAsFoundation([Int]())
        try expectSameAsFoundation([String: [Int]]())
        try expectSameAsFoundation(Optional<Int>.none)
    }

    struct Nothing: Encodable {
        func encode(to encoder: any Encoder) throws {}
    }

    struct HoldsNothing: Encodable {
        var inner = Nothing()
        var list = [Nothing(), Nothing()]
    }

    @Test("a value that encodes nothing is an empty object inside another, and refused on its own as JSONEncoder refuses it")
    func nothing() throws {
        try expectSameAsFoundation(HoldsNothing())
        expectRefused(Nothing())
        #expect(throws: EncodingError.self) { try Self.foundation.encode(Nothing()) }
    }

    /// Writes where it is: the coding path each encoder reports.
    struct Where: Encodable {
        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(encoder.codingPath.map(\.stringValue).joined(separator: "."))
        }
    }

    struct Deep: Encodable {
        var here = Where()
        var list = [Where(), Where()]
        var map = ["k": [Where()]]
        var shapes = [Shape.nothing]
    }

    @Test("coding paths are those JSONEncoder reports, keys and indexes")
    func codingPaths() throws {
        try expectSameAsFoundation(Deep())
        let (stream, _, _) = try both(Deep())
        #expect(stream["list"]?[1] == .string("list.Index 1"))
    }

    struct ManualNesting: Encodable {
        enum Keys: String, CodingKey { case a, b, c }
        func encode(to encoder: any Encoder) throws {
            var top = encoder.container(keyedBy: Keys.self)
            var a = top.nestedContainer(keyedBy: Keys.self, forKey: .a)
            try a.encode(1, forKey: .b)
            var list = a.nestedUnkeyedContainer(forKey: .c)
            try list.encode("x")
            var inner = list.nestedContainer(keyedBy: Keys.self)
            try inner.encodeNil(forKey: .a)
            try list.encode(2)
            #expect(list.count == 3)
            try top.encode(true, forKey: .b)
            var emptyList = top.nestedUnkeyedContainer(forKey: .c)
            _ = emptyList.nestedUnkeyedContainer()
        }
    }

    @Test("nested containers filled in order, as synthesized Codable and most hand-written code fill them")
    func nestedInOrder() throws {
        try expectSameAsFoundation(ManualNesting())
    }

    class Base: Encodable {
        var name = "base"
        enum Keys: String, CodingKey { case name }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(name, forKey: .name)
        }
    }

    final class Derived: Base {
        var extra = 3
        enum DerivedKeys: String, CodingKey { case extra }
        override func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: DerivedKeys.self)
            try container.encode(extra, forKey: .extra)
            try super.encode(to: encoder)
        }
    }

    @Test("a subclass and its superclass writing into one object through the same encoder")
    func sharedContainer() throws {
        try expectSameAsFoundation(Derived())
        try expectSameAsFoundation([Derived(), Derived()])
    }

    final class SuperEncoded: Base {
        enum SubKeys: String, CodingKey { case extra }
        override func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: SubKeys.self)
            try container.encode(1, forKey: .extra)
            try super.encode(to: container.superEncoder())
        }
    }

    struct BackToClosed: Encodable {
        enum Keys: String, CodingKey { case a, b }
        func encode(to encoder: any Encoder) throws {
            var top = encoder.container(keyedBy: Keys.self)
            var first = top.nestedContainer(keyedBy: Keys.self, forKey: .a)
            var second = top.nestedUnkeyedContainer(forKey: .b)
            try second.encode(1)
            try first.encode(2, forKey: .a)
        }
    }

    struct MixedKinds: Encodable {
        enum Keys: String, CodingKey { case a }
        func encode(to encoder: any Encoder) throws {
            var keyed = encoder.container(keyedBy: Keys.self)
            try keyed.encode(1, forKey: .a)
            var list = encoder.unkeyedContainer()
            try list.encode(2)
        }
    }

    struct TwoSingles: Encodable {
        func encode(to encoder: any Encoder) throws {
            var first = encoder.singleValueContainer()
            try first.encode(1)
            var second = encoder.singleValueContainer()
            try second.encode(2)
        }
    }

    @Test("what cannot be streamed is refused whole, the buffer left as it was: super-encoders, a finished container written to, mixed or doubled containers, NaN")
    func refused() {
        expectRefused(SuperEncoded())
        expectRefused(["ok": [BackToClosed()]])
        expectRefused(MixedKinds())
        expectRefused(TwoSingles())
        expectRefused([1.0, .nan])
        expectRefused(["x": Float.infinity])
    }

    final class Overriding: Base {
        override func encode(to encoder: any Encoder) throws {
            try super.encode(to: encoder)
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode("overridden", forKey: .name)
        }
    }

    struct NestedTwice: Encodable {
        enum Keys: String, CodingKey { case meta, a, b }
        func encode(to encoder: any Encoder) throws {
            var top = encoder.container(keyedBy: Keys.self)
            var first = top.nestedContainer(keyedBy: Keys.self, forKey: .meta)
            try first.encode(1, forKey: .a)
            var second = top.nestedContainer(keyedBy: Keys.self, forKey: .meta)
            try second.encode(2, forKey: .b)
        }
    }

    /// Two keys Swift calls equal (é precomposed, and e with a combining accent): one member for JSONEncoder.
    struct EquivalentKeys: Encodable {
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: StringKey.self)
            try container.encode(1, forKey: StringKey(stringValue: "\u{E9}"))
            try container.encode(2, forKey: StringKey(stringValue: "e\u{301}"))
        }
    }

    struct ManyKeys: Encodable {
        var repeated: String?
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: StringKey.self)
            for index in 0..<40 { try container.encode(index, forKey: .init(stringValue: "k\(index)")) }
            if let repeated { try container.encode(-1, forKey: .init(stringValue: repeated)) }
        }
    }

    @Test("a key written twice into one object is refused, as JSONEncoder keeps only the last: subclasses, nested containers, equal strings, past the keys looked through one by one")
    func repeatedKeys() throws {
        expectRefused(Overriding())
        expectRefused(NestedTwice())
        expectRefused(EquivalentKeys())
        expectRefused(ManyKeys(repeated: "k3"))
        expectRefused(ManyKeys(repeated: "k39"))
        try expectSameAsFoundation(ManyKeys(repeated: "k40"))
        // The same key in different objects is no repeat.
        try expectSameAsFoundation(["a": ["a": ["a": 1]], "b": ["a": ["a": 2]]])
    }

    struct CatchesNaN: Encodable {
        enum Keys: String, CodingKey { case a, b }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Keys.self)
            try? container.encode(Double.nan, forKey: .a)
            try container.encode(1, forKey: .b)
        }
    }

    struct Failing: Encodable {
        struct Failure: Error {}
        enum Keys: String, CodingKey { case a }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(1, forKey: .a)
            throw Failure()
        }
    }

    struct CatchesChild: Encodable {
        enum Keys: String, CodingKey { case x, b }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Keys.self)
            try? container.encode(Failing(), forKey: .x)
            try container.encode(2, forKey: .b)
        }
    }

    struct CatchesClosed: Encodable {
        enum Keys: String, CodingKey { case a, b }
        func encode(to encoder: any Encoder) throws {
            var top = encoder.container(keyedBy: Keys.self)
            var first = top.nestedContainer(keyedBy: Keys.self, forKey: .a)
            try top.encode(1, forKey: .b)
            try? first.encode(2, forKey: .a)
        }
    }

    @Test("a value that catches a refusal or its child's error and goes on is still refused: what was written before the error is in the output")
    func caughtErrors() {
        expectRefused(CatchesNaN())
        expectRefused(CatchesChild())
        expectRefused(CatchesClosed())
        // An error the value lets through is its own, not a refusal.
        #expect(throws: Failing.Failure.self) {
            var buffer = ByteBuffer()
            try JSONStreamEncoder().encode(["f": Failing()], into: &buffer)
        }
    }

    /// Asks its encoder for the unkeyed container twice, as a flattened child would.
    struct TwoArrays: Encodable {
        func encode(to encoder: any Encoder) throws {
            var first = encoder.unkeyedContainer()
            try first.encode(Where())
            var second = encoder.unkeyedContainer()
            #expect(second.count == 1)
            try second.encode(Where())
            try second.encode([Where()])
            // (A value here would read its path as JSONEncoder's `a`, without the index, where this encoder says
            // `Index 3.a`: only the paths differ, and only a value that writes its path would show it.)
            var nested = second.nestedContainer(keyedBy: ManualNesting.Keys.self)
            try nested.encode(5, forKey: .a)
        }
    }

    @Test("an encoder's unkeyed container asked for twice is one array, counted and indexed on from the first")
    func unkeyedTwice() throws {
        try expectSameAsFoundation(TwoArrays())
        let (stream, _, _) = try both(TwoArrays())
        #expect(stream[1] == .string("Index 1"))
        #expect(stream[2]?[0] == .string("Index 2.Index 0"))
        #expect(stream[3]?["a"] == .number(JSONNumber("5")!))
    }

    @Test("128-bit integers and a NaN Decimal are refused: JSONEncoder decides what becomes of them")
    func refusedNumbers() {
        expectRefused(["big": Int128(1) << 100])
        expectRefused([UInt128.max])
        expectRefused(["d": Decimal.nan])
    }

    @Test("the buffer it is given keeps its contents and grows; its reader index is not touched")
    func appends() throws {
        var buffer = ByteBuffer(string: "[")
        try JSONStreamEncoder().encode(1, into: &buffer)
        buffer.writeString(",")
        try JSONStreamEncoder().encode(["a": "b"], into: &buffer)
        buffer.writeString("]")
        #expect(String(buffer: buffer) == #"[1,{"a":"b"}]"#)
    }
}

/// A key of any name, for objects whose members the test chooses.
struct StringKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}
