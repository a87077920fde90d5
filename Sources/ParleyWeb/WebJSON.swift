import Foundation
import NIOCore
import NIOFoundationCompat
import ParleyJSON

/// The JSON the web API writes: ISO 8601 times with milliseconds in UTC, sorted keys (stable for tests and diffs).
enum WebJSON {
    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(timestamp(date))
        }
        return encoder
    }()

    static func timestamp(_ date: Date) -> String { Timestamp(date).iso8601 }

    static func encode(_ value: some Encodable) throws -> ByteBuffer {
        try encoder.encodeAsByteBuffer(value, allocator: ByteBufferAllocator())
    }
}
