import Foundation
import NIOCore
import NIOFoundationCompat
import ParleyJSON

/// The JSON the web API writes: ISO 8601 times with milliseconds in UTC, sorted keys (stable for tests and diffs).
enum WebJSON {
    static var encoder: JSONEncoder { ReadableJSON.encoder }

    static func encode(_ value: some Encodable) throws -> ByteBuffer {
        try encoder.encodeAsByteBuffer(value, allocator: ByteBufferAllocator())
    }
}
