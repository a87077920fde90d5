import NIOCore
import NIOEmbedded
import Synchronization
import Testing

@testable import ParleyWire

/// The pool's bookkeeping as a plain value (no memory is allocated or freed here: blocks are addresses the tests
/// make up), the memory functions over a pool of the test's own, and the decoder over the process's pool.
@Suite("Frame room pool")
struct FrameRoomPoolTests {
    static let start = ContinuousClock.now
    static let mebibyte = 1 << 20

    static func block(_ base: UInt, size: Int, at offset: Duration = .zero) -> RoomMemory.Block {
        RoomMemory.Block(base: base, size: size, releasedAt: start + offset)
    }

    @Test("a released room serves the next request of its size class, oldest first; a much smaller request gets none")
    func reuse() {
        var kept = RoomMemory.Kept()
        _ = kept.take(size: 4 * Self.mebibyte)
        _ = kept.take(size: 4 * Self.mebibyte)
        #expect(kept.keep(Self.block(1, size: 4 * Self.mebibyte)).isEmpty)
        #expect(kept.keep(Self.block(2, size: 4 * Self.mebibyte)).isEmpty)
        #expect(kept.bytes == 8 * Self.mebibyte && kept.outstanding == 0)

        #expect(kept.take(size: Self.mebibyte) == nil, "a 4 MiB block would be three quarters wasted on 1 MiB")
        #expect(kept.take(size: 3 * Self.mebibyte)?.base == 1)
        #expect(kept.take(size: 4 * Self.mebibyte)?.base == 2)
        #expect(kept.take(size: 4 * Self.mebibyte) == nil)
        #expect(kept.bytes == 0 && kept.outstanding == 4, "every request counts as a room in use, served or not")
    }

    @Test("at most maximumBytes are kept: the oldest blocks are freed to make space, and a block larger than that is freed at once")
    func bounded() {
        var kept = RoomMemory.Kept()
        kept.outstanding = 5  // five rooms in use, released one after the other
        let size = FrameRoomPool.maximumBytes / 4
        for base in 1...5 {
            let freed = kept.keep(Self.block(UInt(base), size: size))
            #expect(freed.map(\.base) == (base == 5 ? [1] : []))
            #expect(kept.bytes <= FrameRoomPool.maximumBytes)
        }
        #expect(kept.blocks.map(\.base) == [2, 3, 4, 5])

        _ = kept.take(size: FrameRoomPool.maximumBytes * 2)
        #expect(kept.keep(Self.block(9, size: FrameRoomPool.maximumBytes * 2)).map(\.base) == [9])
        #expect(kept.blocks.map(\.base) == [2, 3, 4, 5] && kept.outstanding == 0)
    }

    @Test("a block nobody took for keepFor is freed at the next release or trim")
    func expiry() {
        let keepFor = FrameRoomPool.keepFor
        var kept = RoomMemory.Kept()
        _ = kept.take(size: Self.mebibyte)
        _ = kept.take(size: Self.mebibyte)
        _ = kept.take(size: Self.mebibyte)
        #expect(kept.keep(Self.block(1, size: Self.mebibyte)).isEmpty)
        #expect(kept.keep(Self.block(2, size: Self.mebibyte, at: keepFor / 2)).isEmpty)
        #expect(kept.removeExpired(now: Self.start + keepFor - .nanoseconds(1)).isEmpty)
        // A release one keepFor after the first frees the first.
        #expect(kept.keep(Self.block(3, size: Self.mebibyte, at: keepFor)).map(\.base) == [1])
        #expect(kept.removeExpired(now: Self.start + keepFor * 2).map(\.base) == [2, 3])
        #expect(kept.bytes == 0 && kept.blocks.isEmpty)
    }

    /// What an allocation returned, as a value #require can take (the pool itself cannot be copied into it).
    func allocated(_ pointer: UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? { pointer }

    @Test("real memory: a released room serves the next request of its size class, keeps what is written into it across a realloc, and small blocks are not kept")
    func memoryRoundTrip() throws {
        let pool = Mutex(RoomMemory.Kept())  // the test's own, so that no other test's rooms come between
        let size = 300 << 10
        let first = try #require(allocated(RoomMemory.allocate(size, in: pool)))
        first.initializeMemory(as: UInt8.self, repeating: 0x41, count: size)
        RoomMemory.release(first, to: pool)
        #expect(pool.withLock { ($0.bytes, $0.outstanding) } == (size, 0))

        let second = try #require(allocated(RoomMemory.allocate(size - 1000, in: pool)))
        #expect(second == first, "the kept block serves a request of its size class")
        #expect(pool.withLock { ($0.bytes, $0.outstanding) } == (0, 1))
        second.storeBytes(of: 0x42, as: UInt8.self)
        let grown = try #require(allocated(RoomMemory.reallocate(second, to: 4 * size, in: pool)))
        #expect(grown.load(as: UInt8.self) == 0x42 && grown.load(fromByteOffset: size - 1, as: UInt8.self) == 0x41)
        RoomMemory.release(grown, to: pool)
        #expect(pool.withLock { ($0.bytes, $0.outstanding) } == (4 * size, 0))

        let small = try #require(allocated(RoomMemory.allocate(1000, in: pool)))
        RoomMemory.release(small, to: pool)
        #expect(pool.withLock { ($0.bytes, $0.blocks.count) } == (4 * size, 1), "a small block goes back to malloc")
        RoomMemory.freeBlocks(pool.withLock { $0.removeExpired(now: .now + .seconds(3_600)) })
        #expect(pool.withLock { $0.bytes } == 0)
    }

    @Test("through NIO: a buffer over the pool's memory keeps its bytes as it grows and when copied on write")
    func throughNIO() {
        var buffer = FrameRoomPool.allocator.buffer(capacity: 200 << 10)
        let bytes = (0..<(600 << 10)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        buffer.writeBytes(bytes)  // grows past its capacity: a realloc through the pool
        var copy = buffer
        copy.setInteger(UInt8(0), at: 0)  // a copy on write, through the pool's allocate and copy
        #expect(buffer.readableBytesView.elementsEqual(bytes))
        #expect(copy.getInteger(at: 0, as: UInt8.self) == 0 && copy.readableBytesView.dropFirst().elementsEqual(bytes.dropFirst()))
    }

    @Test("trims: scheduled on the loop given, one at a time, again after each while anything is kept or in use, and not after the loop shut down")
    func trimSchedule() {
        let loop = EmbeddedEventLoop()  // an identity here: nothing is scheduled on it
        let other = EmbeddedEventLoop()
        var kept = RoomMemory.Kept()
        #expect(kept.trimLoop(loop) == nil, "nothing to trim: nothing scheduled")
        _ = kept.take(size: Self.mebibyte)
        #expect(kept.trimToSchedule() === loop)
        #expect(kept.trimToSchedule() == nil, "one at a time")
        #expect(kept.trimEnded(on: loop, cancelled: false) === loop, "a room is still in use: trim again")
        _ = kept.keep(Self.block(1, size: Self.mebibyte))
        #expect(kept.trimEnded(on: loop, cancelled: false) === loop, "a block is kept: trim again")
        _ = kept.removeExpired(now: .now + .seconds(3_600))
        #expect(kept.trimEnded(on: loop, cancelled: false) == nil, "nothing kept or in use: the trims stop")

        _ = kept.take(size: Self.mebibyte)
        #expect(kept.trimLoop(other) === other, "the latest loop given")
        #expect(kept.trimEnded(on: loop, cancelled: true) == nil)
        #expect(kept.trimToSchedule() === other, "a loop shutting down that is no longer the trims' own changes nothing")
        #expect(kept.trimEnded(on: other, cancelled: true) == nil)
        #expect(kept.trimLoop == nil && kept.trimToSchedule() == nil, "its own loop shut down: no trims until another is given")
        #expect(kept.trimLoop(loop) === loop)
    }

    @Test("a trusted peer's frames: one still held is intact after later frames, whose rooms may reuse the memory of frames let go")
    func heldFrameIntact() throws {
        let channel = EmbeddedChannel(handler: FrameBatchDecoder(maximumBodySize: 8 << 20, trustsPeer: true))
        func frame(_ byte: UInt8) -> Frame {
            .message(MessageFrame(header: MessageHeader(typeName: "t", id: MessageID(UInt64(byte))), payload: ByteBuffer(repeating: byte, count: 3 << 20)))
        }
        var held: [Frame] = []
        for byte: UInt8 in [0x41, 0x42, 0x43, 0x44] {
            let batches = try FrameCodecTests.batches(of: FrameCodecTests.bytes([frame(byte)]), inReadsOf: 65_536, into: channel)
            held += batches.flatMap(\.frames)
            // Every other frame is let go at once, so that its room can serve the next.
            if byte % 2 == 0 { held.removeLast() }
        }
        #expect(held == [frame(0x41), frame(0x43)])
        #expect(try channel.finish().isClean)
    }
}
