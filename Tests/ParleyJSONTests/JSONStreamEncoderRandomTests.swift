import Foundation
import NIOCore
import ParleyJSON
import ParleyTestSupport
import Testing

/// Random trees of values, each written through keyed, unkeyed and single-value containers as `encode(to:)`
/// implementations write them, encoded by both encoders: the same JSON every time.
@Suite("Streaming JSON encoder, random values")
struct JSONStreamEncoderRandomTests {
    indirect enum Tree: Encodable {
        case object([(String, Tree)])
        case array([Tree])
        case string(String)
        case int(Int64)
        case unsigned(UInt8)
        case double(Double)
        case bool(Bool)
        case null
        case data(Data)
        case optional(Int?)

        func encode(to encoder: any Encoder) throws {
            switch self {
            case .object(let members):
                var container = encoder.container(keyedBy: StringKey.self)
                for (key, value) in members {
                    // Leaves through the typed overloads, the rest as nested values or nested containers.
                    switch value {
                    case .string(let text): try container.encode(text, forKey: StringKey(stringValue: key))
                    case .int(let number): try container.encode(number, forKey: StringKey(stringValue: key))
                    case .null: try container.encodeNil(forKey: StringKey(stringValue: key))
                    case .optional(let number): try container.encodeIfPresent(number, forKey: StringKey(stringValue: key))
                    case .array(let elements) where elements.count % 2 == 0:
                        var nested = container.nestedUnkeyedContainer(forKey: StringKey(stringValue: key))
                        for element in elements { try nested.encode(element) }
                    default: try container.encode(value, forKey: StringKey(stringValue: key))
                    }
                }
            case .array(let elements):
                var container = encoder.unkeyedContainer()
                for element in elements {
                    switch element {
                    case .bool(let flag): try container.encode(flag)
                    case .double(let number): try container.encode(number)
                    case .object(let members) where members.count % 2 == 1:
                        var nested = container.nestedContainer(keyedBy: StringKey.self)
                        for (key, value) in members { try nested.encode(value, forKey: StringKey(stringValue: key)) }
                    default: try container.encode(element)
                    }
                }
            case .string(let text): try text.encode(to: encoder)
            case .int(let number): try number.encode(to: encoder)
            case .unsigned(let number):
                var container = encoder.singleValueContainer()
                try container.encode(number)
            case .double(let number): try number.encode(to: encoder)
            case .bool(let flag): try flag.encode(to: encoder)
            case .null:
                var container = encoder.singleValueContainer()
                try container.encodeNil()
            case .data(let bytes): try bytes.encode(to: encoder)
            case .optional(let number): try number.encode(to: encoder)
            }
        }
    }

    static let characters: [Character] = ["a", "b", "Z", "0", " ", "\"", "\\", "/", "\n", "\t", "\u{01}", "\u{1F}", "é", "😀", "\u{2028}", "ł"]

    static func text(_ random: inout SeededGenerator) -> String {
        String((0..<Int.random(in: 0...8, using: &random)).map { _ in characters.randomElement(using: &random)! })
    }

    static func tree(depth: Int, _ random: inout SeededGenerator) -> Tree {
        let leaf = depth >= 5 || Int.random(in: 0..<3, using: &random) == 0
        if !leaf {
            let count = Int.random(in: 0...5, using: &random)
            if Bool.random(using: &random) {
                // Distinct keys: JSONEncoder keeps the last of duplicates, a stream writes both.
                var seen = Set<String>()
                var members: [(String, Tree)] = []
                for _ in 0..<count {
                    let key = text(&random)
                    if seen.insert(key).inserted { members.append((key, tree(depth: depth + 1, &random))) }
                }
                return .object(members)
            }
            return .array((0..<count).map { _ in tree(depth: depth + 1, &random) })
        }
        switch Int.random(in: 0..<9, using: &random) {
        case 0: return .string(text(&random))
        case 1: return .int(Int64.random(in: .min ... .max, using: &random))
        case 2: return .unsigned(UInt8.random(in: 0...255, using: &random))
        case 3:
            let choices: [Double] = [0, -0.0, 1, 0.1, 1e-7, 123.456, 1e21, -9.75e300, .leastNormalMagnitude, .greatestFiniteMagnitude]
            return .double(Bool.random(using: &random) ? choices.randomElement(using: &random)! : Double.random(in: -1e6...1e6, using: &random))
        case 4: return .bool(Bool.random(using: &random))
        case 5: return .null
        case 6: return .data(Data((0..<Int.random(in: 0...7, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }))
        case 7: return .optional(Bool.random(using: &random) ? Int.random(in: -5...5, using: &random) : nil)
        default: return .string(text(&random))
        }
    }

    @Test("2 000 random trees: the streamed JSON reads as the same value as JSONEncoder's")
    func randomTrees() throws {
        let foundation = JSONEncoder()
        foundation.outputFormatting = .withoutEscapingSlashes
        var random = SeededGenerator(seed: 2026_11_29)
        var streamedCount = 0
        for index in 0..<2_000 {
            // Wrapped in an object: JSONEncoder refuses a top level that encodes nothing (an absent optional).
            let value = Tree.object([("v", Self.tree(depth: 0, &random))])
            var buffer = ByteBuffer()
            try JSONStreamEncoder().encode(value, into: &buffer)
            streamedCount += 1
            let expected = try JSONValue(parsing: foundation.encode(value))
            let streamed = try JSONValue(parsing: buffer)
            #expect(streamed == expected, "tree \(index): streamed \(String(buffer: buffer)), JSONEncoder \(expected)")
            if streamed != expected { break }
        }
        #expect(streamedCount == 2_000)
    }
}
