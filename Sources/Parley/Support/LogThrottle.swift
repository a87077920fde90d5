import Logging
import NIOCore
import NIOPosix
import Synchronization

/// Keeps a flood of one kind of warning — a host sending garbage, hundreds of connections refused — from becoming a
/// flood of logs that buries everything else (or, without journald's own limits, fills a disk). Each kind (one
/// message text: details belong in the metadata) may write `burst` lines back to back and `perSecond` after that.
/// Nothing is silently lost: a second after the first line held back, one line says how many of that kind were not
/// written — `log lines held back`, with the message as `line` and the number as `count`.
public final class LogThrottle: Sendable {
    private struct Kind {
        var bucket: TokenBucket
        var heldBack = 0
    }

    private let limit: MessageRateLimit
    private let kinds = Mutex<[String: Kind]>([:])
    private let timers: any EventLoop

    public init(perSecond: Double = 10, burst: Int = 100, timers: any EventLoop = MultiThreadedEventLoopGroup.singleton.next()) {
        limit = MessageRateLimit(perSecond: perSecond, burst: burst)
        self.timers = timers
    }

    public func warning(_ message: Logger.Message, metadata: Logger.Metadata = [:], to logger: Logger) {
        log(.warning, message, metadata: metadata, to: logger)
    }

    /// As ``warning(_:metadata:to:)``, at `level`; the `log lines held back` line is a warning whatever the level.
    public func log(_ level: Logger.Level, _ message: Logger.Message, metadata: Logger.Metadata = [:], to logger: Logger) {
        let key = message.description
        let now = NIODeadline.now()
        let (write, firstHeldBack) = kinds.withLock { kinds -> (Bool, Bool) in
            var kind = kinds[key] ?? Kind(bucket: TokenBucket(limit, now: now))
            defer { kinds[key] = kind }
            if kind.bucket.take(now: now) { return (true, false) }
            kind.heldBack += 1
            return (false, kind.heldBack == 1)
        }
        if write {
            logger.log(level: level, message, metadata: metadata)
        } else if firstHeldBack {
            timers.scheduleTask(in: .seconds(1)) { self.reportHeldBack(key, to: logger) }
        }
    }

    private func reportHeldBack(_ key: String, to logger: Logger) {
        let count = kinds.withLock { kinds -> Int in
            defer { kinds[key]?.heldBack = 0 }
            return kinds[key]?.heldBack ?? 0
        }
        guard count > 0 else { return }
        logger.warning("log lines held back", metadata: ["line": "\(key)", "count": "\(count)"])
    }
}
