import NIOCore
import NIOPosix

/// Where Parley's blocking work runs — opening a database, waiting for a subprocess, a call that waits for the
/// kernel's network lock — so that it holds up neither an event loop (every connection of that loop would wait
/// with it) nor Swift's cooperative pool (one thread per core: on a two-core machine, two blocking calls there
/// stall every task of the process).
///
/// The one way to do so in Parley, over `NIOThreadPool`: ``shared`` for short work, and pools of one thread
/// (``serial()``) for calls that should run one at a time or may block for seconds, so that they hold up only
/// each other.
public struct BlockingPool: Sendable {
    private let pool: NIOThreadPool

    /// NIO's shared thread pool (`NIOThreadPool.singleton`, one thread per core), which is never shut down.
    public static let shared = BlockingPool(NIOThreadPool.singleton)

    /// Runs work on `pool`, which its owner starts and shuts down only after the last ``run(_:)`` has returned.
    public init(_ pool: NIOThreadPool) {
        self.pool = pool
    }

    /// A pool of one thread of its own, started now and never shut down: what runs on it runs one call at a time.
    /// Keep it in a `static let` or a global: each call of this function starts a thread.
    public static func serial() -> BlockingPool {
        let pool = NIOThreadPool(numberOfThreads: 1)
        pool.start()
        return BlockingPool(pool)
    }

    /// Runs `body` on one of the pool's threads and returns what it returns, or throws what it throws; throws
    /// `CancellationError` without running it if the pool was shut down, or the task cancelled before `body` started.
    public func run<Value: Sendable>(_ body: @escaping @Sendable () throws -> Value) async throws -> Value {
        try await pool.runIfActive(body)
    }

    /// ``run(_:)`` for code on an event loop: the future completes on `eventLoop`.
    public func run<Value: Sendable>(
        completingOn eventLoop: any EventLoop, _ body: @escaping @Sendable () throws -> Value
    ) -> EventLoopFuture<Value> {
        pool.runIfActive(eventLoop: eventLoop, body)
    }
}
