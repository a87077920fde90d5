import Foundation
import NIOCore
import Synchronization
import Testing

@testable import Parley

/// Typed payloads are written by the streaming encoder, and by `JSONEncoder` for what it refuses: either way the
/// peer reads what `JSONEncoder` would have sent, and a value that cannot be encoded fails as it always did.
@Suite("Typed payload encoding")
struct PayloadCodingTests {
    struct Item: Codable, Equatable {
        var id: Int
        var title: String
        var link: URL
    }

    class Named: Codable {
        var name = "base"
    }

    /// Encodes its superclass through a super-encoder, which the streaming encoder refuses.
    final class Extended: Named {
        var extra = 7
        enum Keys: String, CodingKey { case extra }
        override init() { super.init() }
        required init(from decoder: any Decoder) throws { try super.init(from: decoder) }
        override func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(extra, forKey: .extra)
            try super.encode(to: container.superEncoder())
        }
    }

    func foundation(_ value: some Encodable) throws -> [String: Any] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .withoutEscapingSlashes
        return try JSONSerialization.jsonObject(with: encoder.encode(value)) as! [String: Any]
    }

    func payload(_ value: some Encodable) throws -> [String: Any] {
        let buffer = try PayloadCoding.encode(value, allocator: ByteBufferAllocator())
        return try JSONSerialization.jsonObject(with: Data(buffer.readableBytesView)) as! [String: Any]
    }

    @Test("a plain value is the JSON JSONEncoder writes, URLs as strings with their slashes")
    func streamed() throws {
        let item = Item(id: 3, title: "a \"quoted\" title", link: URL(string: "https://example.com/x/y")!)
        #expect(try payload(item) as NSDictionary == foundation(item) as NSDictionary)
        #expect(try payload(item)["link"] as? String == "https://example.com/x/y")
    }

    @Test("a value the streaming encoder refuses is encoded by JSONEncoder instead")
    func fallsBack() throws {
        let value = Extended()
        let encoded = try payload(value)
        #expect(encoded as NSDictionary == (try foundation(value)) as NSDictionary)
        #expect((encoded["super"] as? [String: Any])?["name"] as? String == "base")
    }

    /// Counts how often it is encoded: once by the stream, and once more by JSONEncoder after a refusal.
    struct Counted: Encodable {
        static let encodings = Atomic<Int>(0)
        enum Keys: String, CodingKey { case a }
        var refused: Bool
        func encode(to encoder: any Encoder) throws {
            Self.encodings.add(1, ordering: .relaxed)
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(1, forKey: .a)
            if refused { _ = container.superEncoder() }
        }
    }

    @Test("the streaming encoder writes what it can, with no second encoding; JSONEncoder runs only after a refusal")
    func encodedOnce() throws {
        _ = try PayloadCoding.encode(Counted(refused: false), allocator: ByteBufferAllocator())
        #expect(Counted.encodings.load(ordering: .relaxed) == 1)
        _ = try PayloadCoding.encode(Counted(refused: true), allocator: ByteBufferAllocator())
        #expect(Counted.encodings.load(ordering: .relaxed) == 3)
    }

    @Test("a value neither can encode fails with the type's name and JSONEncoder's reason")
    func fails() {
        #expect {
            _ = try PayloadCoding.encode(["x": Double.nan], allocator: ByteBufferAllocator())
        } throws: { error in
            guard case TransceiverError.encodingFailed(let type, let underlying) = error else { return false }
            return type.contains("Dictionary") && "\(underlying)".lowercased().contains("nan")
        }
    }
}
