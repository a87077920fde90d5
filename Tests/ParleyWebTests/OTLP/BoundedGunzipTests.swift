import CompressNIO
import NIOCore
import Testing

@testable import ParleyWeb

@Suite("gzip inflated within a limit")
struct BoundedGunzipTests {
    static func gzip(_ bytes: [UInt8]) throws -> ByteBuffer {
        var plain = ByteBuffer(bytes: bytes)
        return try plain.compress(with: .gzip())
    }

    @Test("up to the limit exactly it inflates; one byte more is too large, however the output windows fall")
    func exactLimit() throws {
        let limit = 3 * BoundedGunzip.window + 17
        let atLimit = try Self.gzip([UInt8](repeating: 7, count: limit))
        #expect(try BoundedGunzip.inflate(atLimit, limit: limit).readableBytes == limit)
        let past = try Self.gzip([UInt8](repeating: 7, count: limit + 1))
        #expect(throws: BoundedGunzip.Problem.tooLarge) { try BoundedGunzip.inflate(past, limit: limit) }
    }

    @Test("every member of a multi-member gzip is inflated and counted against the limit")
    func members() throws {
        var body = try Self.gzip(Array("first ".utf8))
        var second = try Self.gzip(Array("second".utf8))
        body.writeBuffer(&second)
        #expect(String(buffer: try BoundedGunzip.inflate(body, limit: 100)) == "first second")
        var bomb = ByteBuffer()
        let member = try Self.gzip([UInt8](repeating: 0, count: 1 << 20))
        for _ in 0..<20 { bomb.writeImmutableBuffer(member) }
        #expect(throws: BoundedGunzip.Problem.tooLarge) { try BoundedGunzip.inflate(bomb, limit: 16 << 20) }
    }

    @Test("a gzip cut short, garbage after a member, and what is not gzip at all are invalid")
    func invalid() throws {
        let whole = try Self.gzip([UInt8](repeating: 1, count: 1000))
        #expect(throws: BoundedGunzip.Problem.invalid("it ends before its end")) {
            try BoundedGunzip.inflate(whole.getSlice(at: 0, length: whole.readableBytes - 4)!, limit: 1 << 20)
        }
        var trailing = whole
        trailing.writeString("garbage")
        #expect(throws: BoundedGunzip.Problem.self) { try BoundedGunzip.inflate(trailing, limit: 1 << 20) }
        #expect(throws: BoundedGunzip.Problem.self) { try BoundedGunzip.inflate(ByteBuffer(string: "plain text"), limit: 1 << 20) }
        #expect(throws: BoundedGunzip.Problem.self) { try BoundedGunzip.inflate(ByteBuffer(), limit: 1 << 20) }
    }
}
