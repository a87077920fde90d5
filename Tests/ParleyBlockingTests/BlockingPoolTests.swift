import Foundation
import NIOCore
import NIOPosix
import ParleyBlocking
import Synchronization
import Testing

@Suite("BlockingPool")
struct BlockingPoolTests {
    struct Refused: Error, Equatable {
        var reason: String
    }

    /// A value the pool's threads and the test share.
    final class Shared<Value: Sendable>: Sendable {
        private let mutex: Mutex<Value>
        init(_ value: Value) { mutex = Mutex(value) }
        func update<Result: Sendable>(_ body: (inout Value) -> Result) -> Result { mutex.withLock { body(&$0) } }
        var value: Value { mutex.withLock { $0 } }
    }

    /// The calling thread, by identity.
    static func currentThread() -> UInt {
        #if canImport(Darwin)
        UInt(bitPattern: pthread_self())
        #else
        UInt(pthread_self())
        #endif
    }

    @Test("work runs on a thread of the pool, not the caller's, and its value comes back")
    func runsOffTheCaller() async throws {
        let caller = Self.currentThread()
        let (value, worker) = try await BlockingPool.shared.run { (6 * 7, Self.currentThread()) }
        #expect(value == 42)
        #expect(worker != caller)
        let serial = try await BlockingPool.serial().run { Self.currentThread() }
        #expect(serial != caller && serial != worker)
    }

    @Test("what the body throws reaches the caller as thrown, typed")
    func propagatesErrors() async {
        await #expect(throws: Refused(reason: "disk full")) {
            try await BlockingPool.shared.run { () throws -> Int in throw Refused(reason: "disk full") }
        }
    }

    @Test("a serial pool runs one call at a time, in the order given")
    func serialKeepsOrder() async throws {
        let pool = BlockingPool.serial()
        let order = Shared<[Int]>([])
        let running = Shared(0)
        let overlapped = Shared(false)
        // Queued from one task in turn, without waiting for each: the pool's one thread takes them as queued.
        let futures = (0..<50).map { index in
            pool.run(completingOn: MultiThreadedEventLoopGroup.singleton.any()) {
                if running.update({ $0 += 1; return $0 }) > 1 { overlapped.update { $0 = true } }
                order.update { $0.append(index) }
                running.update { $0 -= 1 }
            }
        }
        for future in futures { try await future.get() }
        #expect(order.value == Array(0..<50))
        #expect(!overlapped.value)
    }

    @Test("work whose task is cancelled before the work starts does not run")
    func cancelledBeforeStart() async throws {
        let pool = BlockingPool.serial()
        let gate = DispatchSemaphore(value: 0)
        // Holds the pool's one thread until the second call's task is cancelled.
        let first = pool.run(completingOn: MultiThreadedEventLoopGroup.singleton.any()) { gate.wait() }
        let ran = Shared(false)
        let second = Task { try await pool.run { ran.update { $0 = true } } }
        second.cancel()
        gate.signal()
        try await first.get()
        await #expect(throws: CancellationError.self) { try await second.value }
        #expect(!ran.value)
    }

    @Test("a pool that was shut down refuses work instead of running it")
    func shutDownPool() async throws {
        let threads = NIOThreadPool(numberOfThreads: 1)
        threads.start()
        try await threads.shutdownGracefully()
        let ran = Shared(false)
        await #expect(throws: CancellationError.self) {
            try await BlockingPool(threads).run { ran.update { $0 = true } }
        }
        #expect(!ran.value)
    }
}
