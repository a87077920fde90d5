import Foundation
import NIOCore
import Parley

// Message types shared by the test suite, the test peer process and the benchmarks. Wire names are fixed so
// that both processes agree whatever the Swift module is called.

public struct Echo: Codable, Sendable, Hashable, NamedMessage {
    public static let messageType = "test.Echo"
    public var text: String
    public init(text: String) { self.text = text }
}

/// One of a numbered stream of messages from `sender`; `padding` sets the payload size.
public struct Sequenced: Codable, Sendable, Hashable, NamedMessage {
    public static let messageType = "test.Sequenced"
    public var sender: String
    public var sequence: Int
    public var padding: String
    public init(sender: String, sequence: Int, padding: String = "") {
        self.sender = sender
        self.sequence = sequence
        self.padding = padding
    }
}

/// Asks a test peer what it has received so far.
public struct ProgressQuery: Codable, Sendable, Hashable, NamedMessage {
    public static let messageType = "test.ProgressQuery"
    public init() {}
}

public struct Progress: Codable, Sendable, Hashable, NamedMessage {
    public static let messageType = "test.Progress"
    /// Highest in-order sequence number seen per sender (-1 = none).
    public var lastSequence: [String: Int]
    /// Messages that arrived out of order (must stay 0).
    public var outOfOrder: Int
    public var received: Int
    public init(lastSequence: [String: Int], outOfOrder: Int, received: Int) {
        self.lastSequence = lastSequence
        self.outOfOrder = outOfOrder
        self.received = received
    }
}

/// A large binary payload; answered with its size and a checksum.
public struct Blob: Codable, Sendable, Hashable, NamedMessage {
    public static let messageType = "test.Blob"
    public var data: Data
    public init(data: Data) { self.data = data }
}

public struct BlobDigest: Codable, Sendable, Hashable, NamedMessage {
    public static let messageType = "test.BlobDigest"
    public var size: Int
    public var checksum: UInt64
    public init(size: Int, checksum: UInt64) {
        self.size = size
        self.checksum = checksum
    }

    public init(of data: Data) {
        self = data.withUnsafeBytes { BlobDigest(bytes: $0) }
    }

    public init(of buffer: ByteBuffer) {
        self = buffer.withUnsafeReadableBytes { BlobDigest(bytes: $0) }
    }

    private init(bytes: UnsafeRawBufferPointer) {
        // FNV-1a: cheap, order-sensitive, enough to show the bytes arrived unchanged.
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash &*= 0x100_0000_01b3
        }
        self.init(size: bytes.count, checksum: hash)
    }
}

/// Type name for binary payloads sent without JSON (`sendRaw`/`requestRaw`); answered with a `BlobDigest`.
public enum RawBlob {
    public static let typeName = "test.RawBlob"

    /// `size` bytes in which every 4 KiB block starts with its own index, so a lost, repeated or reordered
    /// block changes the digest. Cheap to make: large test payloads must not hog the test's threads.
    public static func payload(size: Int) -> ByteBuffer {
        var buffer = ByteBuffer(repeating: 0x5A, count: size)
        for (block, offset) in stride(from: 0, to: size - 3, by: 4096).enumerated() {
            buffer.setInteger(UInt32(block), at: offset)
        }
        return buffer
    }

    /// The same pattern as `Data`.
    public static func data(size: Int) -> Data { Data(payload(size: size).readableBytesView) }
}

/// A request whose responder sleeps for `milliseconds` before answering.
public struct SlowRequest: Codable, Sendable, Hashable, NamedMessage {
    public static let messageType = "test.SlowRequest"
    public var milliseconds: Int
    public init(milliseconds: Int) { self.milliseconds = milliseconds }
}

/// Keeps per-sender ordering state for `Sequenced` messages.
public actor SequenceTracker {
    private var last: [String: Int] = [:]
    private var outOfOrder = 0
    private var received = 0

    public init() {}

    public func record(_ message: Sequenced) {
        received += 1
        let expected = (last[message.sender] ?? -1) + 1
        if message.sequence == expected {
            last[message.sender] = message.sequence
        } else {
            outOfOrder += 1
        }
    }

    public var progress: Progress { Progress(lastSequence: last, outOfOrder: outOfOrder, received: received) }
}
