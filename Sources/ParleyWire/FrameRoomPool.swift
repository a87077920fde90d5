// The allocator init used here is NIO's SPI for buffers over memory from elsewhere (ByteBuffer-core.swift); it is
// the one place NIO tells its caller that a buffer's storage has been released.
@_spi(CustomByteBufferAllocator) import NIOCore
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Memory for large frames, used again. A frame that spans several socket reads is gathered into a room of its
/// own. Above glibc's mmap threshold (128 KiB in parleyd) every such room used to be fresh pages from the kernel,
/// and faulting them in, one fault and one zeroed page per 4 KiB, was over a third of parleyd's time when it
/// forwarded 4 MiB frames (docs/performance.md).
///
/// A ``FrameBatchDecoder`` made with `trustsPeer` (Parley gives it to connections over a Unix socket: parleyd's
/// local apps, and an app's own connection to parleyd) takes its rooms from ``allocator``. When the last buffer
/// over a room's memory goes, whoever held it last, NIO hands the memory back through that allocator, and the pool
/// keeps it for the next large frame instead of returning it to the system. Reuse therefore starts only once
/// nothing refers to the earlier frame: a frame handed on is never written over. Buffers made from a room's
/// buffer (a copy on write, a slice grown) come from the same allocator and return to the pool as well.
///
/// Sizes are address space, not resident memory: NIO rounds a buffer's capacity up to a power of two, so the
/// room of a 4 MiB frame (4 MiB and its header) is an 8 MiB block of which 4 MiB is ever touched.
///
/// The pool is one per process and bounded, so that it cannot become memory a peer makes parleyd hold outside its
/// budget: at most ``maximumBytes`` are kept, a kept block serves requests of between half its size and its size,
/// and blocks nobody took for ``keepFor`` are given back to the system, at the next release and by a trim every
/// ``keepFor`` on the event loop given to ``trims(on:)``, which runs while any large block is in use or kept (it
/// wakes once a second while an app holds on to a large frame's payload).
public enum FrameRoomPool {
    /// Smaller rooms come from malloc's own free lists, which already reuse memory.
    public static let minimumRoom = 128 << 10
    public static let maximumBytes = 16 << 20
    public static let keepFor: Duration = .seconds(1)

    /// Rooms for large frames: memory kept from earlier rooms where there is some, else malloc's.
    public static let allocator = ByteBufferAllocator(
        allocate: { size in RoomMemory.allocate(size, in: RoomMemory.kept) },
        reallocate: { pointer, _, newSize in RoomMemory.reallocate(pointer, to: newSize, in: RoomMemory.kept) },
        deallocate: { pointer in RoomMemory.release(pointer, to: RoomMemory.kept) },
        copy: { destination, source, count in destination.copyMemory(from: source, byteCount: count) }
    )

    /// Trims run on `eventLoop` from now on (the latest loop given wins), every ``keepFor`` while any large block is
    /// in use or kept, so that an idle process gives all of it back. Give a loop that lives as long as the
    /// connections using the pool; a loop that shuts down stops the trims until another is given.
    public static func trims(on eventLoop: any EventLoop) {
        RoomMemory.scheduleTrim(on: RoomMemory.kept.withLock { $0.trimLoop(eventLoop) })
    }
}

/// The memory behind ``FrameRoomPool/allocator``. Each block starts with a header holding its usable size, so that
/// a block released is known by its size alone (NIO's release passes only the address).
enum RoomMemory {
    /// Keeps malloc's 16-byte alignment for the bytes after it.
    static let headerSize = 16

    struct Block {
        /// The block's start (its header), as an address: the list crosses threads.
        var base: UInt
        var size: Int
        var releasedAt: ContinuousClock.Instant
    }

    struct Kept {
        var blocks: [Block] = []  // oldest first (at most maximumBytes / minimumRoom of them)
        var bytes: Int { blocks.reduce(0) { $0 + $1.size } }
        /// Large rooms handed out and not released yet.
        var outstanding = 0
        var trimLoop: (any EventLoop)?
        var trimScheduled = false

        /// The loop to schedule a trim on now, if one is due: there is a loop, none is scheduled, and something to
        /// trim now or later. Marks it scheduled.
        mutating func trimToSchedule() -> (any EventLoop)? {
            guard let trimLoop, !trimScheduled, bytes > 0 || outstanding > 0 else { return nil }
            trimScheduled = true
            return trimLoop
        }

        mutating func trimLoop(_ eventLoop: any EventLoop) -> (any EventLoop)? {
            trimLoop = eventLoop
            return trimToSchedule()
        }

        /// A scheduled trim ran (`cancelled`: its loop shut down instead); returns where to schedule the next.
        mutating func trimEnded(on eventLoop: any EventLoop, cancelled: Bool) -> (any EventLoop)? {
            trimScheduled = false
            if cancelled {
                if trimLoop === eventLoop { trimLoop = nil }
                return nil
            }
            return trimToSchedule()
        }

        /// The oldest kept block that can serve `size` without wasting more than half of itself.
        mutating func take(size: Int) -> Block? {
            outstanding += 1
            guard let index = blocks.firstIndex(where: { $0.size >= size && $0.size / 2 <= size }) else { return nil }
            return blocks.remove(at: index)
        }

        /// Keeps `block` unless it would not fit; returns what is to be freed: expired blocks, the oldest ones the
        /// new one displaces, or the new one itself.
        mutating func keep(_ block: Block) -> [Block] {
            outstanding -= 1
            var freed = removeExpired(now: block.releasedAt)
            guard block.size <= FrameRoomPool.maximumBytes else { return freed + [block] }
            while bytes + block.size > FrameRoomPool.maximumBytes { freed.append(blocks.removeFirst()) }
            blocks.append(block)
            return freed
        }

        mutating func removeExpired(now: ContinuousClock.Instant) -> [Block] {
            let expired = blocks.prefix { now - $0.releasedAt >= FrameRoomPool.keepFor }
            blocks.removeFirst(expired.count)
            return Array(expired)
        }
    }

    /// The process's pool. The functions below take the pool as a parameter so that tests can give them their own.
    static let kept = Mutex(Kept())

    static func allocate(_ size: Int, in kept: borrowing Mutex<Kept>) -> UnsafeMutableRawPointer? {
        if size >= FrameRoomPool.minimumRoom {
            let (block, trimLoop) = kept.withLock { kept in (kept.take(size: size), kept.trimToSchedule()) }
            scheduleTrim(on: trimLoop)
            if let block { return UnsafeMutableRawPointer(bitPattern: block.base)! + headerSize }
        }
        guard let base = malloc(size + headerSize) else { return nil }
        return start(of: base, size: size)
    }

    static func reallocate(_ pointer: UnsafeMutableRawPointer?, to size: Int, in kept: borrowing Mutex<Kept>) -> UnsafeMutableRawPointer? {
        guard let pointer else { return allocate(size, in: kept) }
        let wasLarge = (pointer - headerSize).load(as: Int.self) >= FrameRoomPool.minimumRoom
        guard let base = realloc(pointer - headerSize, size + headerSize) else { return nil }
        let isLarge = size >= FrameRoomPool.minimumRoom
        if wasLarge != isLarge { kept.withLock { $0.outstanding += isLarge ? 1 : -1 } }
        return start(of: base, size: size)
    }

    static func release(_ pointer: UnsafeMutableRawPointer, to kept: borrowing Mutex<Kept>) {
        let base = pointer - headerSize
        let size = base.load(as: Int.self)
        guard size >= FrameRoomPool.minimumRoom else { return free(base) }
        // The clock is read under the lock, so that the list stays in release order for removeExpired.
        let (freed, trimLoop) = kept.withLock { kept in
            (kept.keep(Block(base: UInt(bitPattern: base), size: size, releasedAt: .now)), kept.trimToSchedule())
        }
        freeBlocks(freed)
        scheduleTrim(on: trimLoop)
    }

    /// Gives back to the system what nobody took for ``FrameRoomPool/keepFor``.
    static func trim(_ kept: borrowing Mutex<Kept>) {
        freeBlocks(kept.withLock { $0.removeExpired(now: .now) })
    }

    /// Schedules a trim of the process's pool on `eventLoop` (nil: none is due), and the next one after it.
    static func scheduleTrim(on eventLoop: (any EventLoop)?) {
        guard let eventLoop else { return }
        let task = eventLoop.scheduleTask(in: TimeAmount(FrameRoomPool.keepFor)) {
            trim(kept)
            scheduleTrim(on: kept.withLock { $0.trimEnded(on: eventLoop, cancelled: false) })
        }
        task.futureResult.whenFailure { _ in _ = kept.withLock { $0.trimEnded(on: eventLoop, cancelled: true) } }
    }

    static func freeBlocks(_ blocks: [Block]) {
        for block in blocks { free(UnsafeMutableRawPointer(bitPattern: block.base)) }
    }

    private static func start(of base: UnsafeMutableRawPointer, size: Int) -> UnsafeMutableRawPointer {
        base.storeBytes(of: size, as: Int.self)
        return base + headerSize
    }
}
