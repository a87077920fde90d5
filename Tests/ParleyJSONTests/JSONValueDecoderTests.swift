import Foundation
import NIOCore
import ParleyJSON
import Testing

@Suite("Decoding Decodable types from a parsed tree")
struct JSONValueDecoderTests {
    struct Item: Codable, Equatable {
        var name: String
        var count: Int
        var ratio: Double
        var done: Bool
        var note: String?
        var tags: [String]
        var owner: Owner?
        var scores: [String: UInt8]
    }

    struct Owner: Codable, Equatable {
        var id: Int64
    }

    struct List: Codable, Equatable {
        var items: [Item]
    }

    func decode<T: Decodable>(_ type: T.Type, _ text: String) throws -> T {
        try JSONValueDecoder().decode(type, from: ByteBuffer(string: text))
    }

    @Test("what JSONEncoder writes, the tree decoder reads back as JSONDecoder does: optionals absent, null and present, nesting, arrays, maps")
    func agreesWithFoundation() throws {
        let list = List(items: [
            Item(name: "milk \"2%\" ✓", count: -3, ratio: 0.25, done: true, note: nil, tags: ["a", "b"], owner: Owner(id: 1 << 60), scores: ["x": 255]),
            Item(name: "", count: 0, ratio: 1e-7, done: false, note: "later", tags: [], owner: nil, scores: [:]),
        ])
        let text = String(decoding: try JSONEncoder().encode(list), as: UTF8.self)
        #expect(try decode(List.self, text) == list)
        #expect(try decode(List.self, text) == (try JSONDecoder().decode(List.self, from: Data(text.utf8))))
        let withNull = #"{"items":[{"name":"n","count":1,"ratio":2,"done":false,"note":null,"tags":[],"owner":null,"scores":{}}]}"#
        #expect(try decode(List.self, withNull).items[0].note == nil)
        #expect(try decode(List.self, withNull).items[0].ratio == 2)
    }

    @Test("an error says where: a missing member, a value of the wrong kind, and a null where a value must be, each with its path")
    func errorsCarryTheirPath() {
        func path(_ error: any Error) -> String {
            let context: DecodingError.Context? =
                switch error as? DecodingError {
                case .keyNotFound(_, let context), .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context): context
                default: nil
                }
            return context?.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined() ?? "?"
        }
        let good = #"{"name":"n","count":1,"ratio":2,"done":false,"tags":[],"scores":{}}"#
        let missing = #"{"items":[\#(good),{"count":1,"ratio":2,"done":false,"tags":[],"scores":{}}]}"#
        #expect {
            try decode(List.self, missing)
        } throws: { error in
            guard case .keyNotFound(let key, _) = error as? DecodingError else { return false }
            return key.stringValue == "name" && path(error) == ".items[1]"
        }
        let mismatch = #"{"items":[\#(good),\#(good.replacingOccurrences(of: #""tags":[]"#, with: #""tags":["a",3]"#))]}"#
        #expect {
            try decode(List.self, mismatch)
        } throws: { error in
            guard case .typeMismatch = error as? DecodingError else { return false }
            return path(error) == ".items[1].tags[1]"
        }
        let null = #"{"items":[\#(good.replacingOccurrences(of: #""count":1"#, with: #""count":null"#))]}"#
        #expect {
            try decode(List.self, null)
        } throws: { error in
            guard case .valueNotFound = error as? DecodingError else { return false }
            return path(error) == ".items[0].count"
        }
    }

    @Test("integers: whole numbers in any notation are read, fractions and values out of range are refused")
    func integers() throws {
        #expect(try decode([Int].self, "[1, 1.0, 1e3, -0]") == [1, 1, 1000, 0])
        #expect(try decode([UInt64].self, "[18446744073709551615]") == [UInt64.max])
        #expect(throws: DecodingError.self) { try decode([Int].self, "[1.5]") }
        #expect(throws: DecodingError.self) { try decode([UInt8].self, "[256]") }
        #expect(throws: DecodingError.self) { try decode([UInt].self, "[-1]") }
    }

    @Test("a repeated member name reads its last value; an object of 100 000 members decodes as a dictionary in one pass")
    func largeAndRepeatedObjects() throws {
        #expect(try decode(Owner.self, #"{"id":1,"id":2}"#) == Owner(id: 2))
        let members = (0..<100_000).map { #""k\#($0)":\#($0)"# }.joined(separator: ",")
        let map = try decode([String: Int].self, "{\(members)}")
        #expect(map.count == 100_000)
        #expect(map["k99999"] == 99_999)
    }

    @Test("what is not JSON is refused before anything is decoded, with the offset of the bad byte")
    func notJSON() {
        #expect(throws: JSONError.self) { try decode(Owner.self, #"{"id":1"#) }
    }
}
