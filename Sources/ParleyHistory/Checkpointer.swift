import GRDB
import GRDBSQLite
import Logging
import ParleyBlocking
import Synchronization

/// Copies the history's WAL back into its database file on a connection of its own, so that the writer does not.
///
/// SQLite checkpoints, by default, inside the commit that takes the WAL past 1 000 pages, on the connection that
/// made it: parleyd's one writer then stopped storing for the copy and its two `fsync`s. Here the writer's commits
/// only count the WAL's pages (SQLite's WAL hook, which replaces the automatic checkpoint); past
/// ``pagesBeforeCheckpoint`` they wake this checkpointer, which runs a passive checkpoint (it takes no lock the
/// writer needs, and copies what no reader still reads) while the writer goes on. Should it fall behind, the
/// writer checkpoints itself past ``pagesBeforeWriterCheckpoints``, as SQLite would have, so the WAL stays bounded.
/// Durability is unchanged: a commit is in the WAL whichever connection copies it later.
final class Checkpointer: Sendable {
    /// SQLite's own threshold for its automatic checkpoint.
    static let pagesBeforeCheckpoint: Int32 = 1_000
    /// 16 MiB of 4 KiB pages. Past it the checkpointer has most likely copied all but the newest pages already, so
    /// the writer's own checkpoint is short.
    static let pagesBeforeWriterCheckpoints: Int32 = 4_000
    /// What ``pagesBeforeWriterCheckpoints`` comes to in the WAL file, which holds each page with a 24-byte header.
    static let walBytesBeforeWriterCheckpoints = Int64(pagesBeforeWriterCheckpoints) * (4096 + 24)

    private enum Request: Sendable {
        case checkpoint
        /// The continuation resumed, once the checkpoints asked for before are done.
        case caughtUp(CheckedContinuation<Void, Never>)
    }

    private let requests: AsyncStream<Request>.Continuation
    /// A checkpoint is asked for and not yet begun: commits meanwhile ask for no other.
    private final class Asked: Sendable {
        let flag = Atomic<Bool>(false)
    }

    private let asked = Asked()
    private let checkpoints: Task<Void, Never>

    init(path: String, logger: Logger) {
        let (stream, requests) = AsyncStream.makeStream(of: Request.self)
        self.requests = requests
        let asked = self.asked
        checkpoints = Task {
            // Opened at the first checkpoint: the writer has made the file, and set it to WAL, by then.
            var connection: DatabaseQueue?
            for await request in stream {
                switch request {
                case .caughtUp(let continuation):
                    continuation.resume()
                case .checkpoint:
                    asked.flag.store(false, ordering: .sequentiallyConsistent)
                    do {
                        let queue: DatabaseQueue
                        if let connection {
                            queue = connection
                        } else {
                            queue = try await BlockingPool.shared.run { try Self.open(path) }
                            connection = queue
                        }
                        try await queue.writeWithoutTransaction { db in _ = try db.checkpoint(.passive) }
                    } catch let error as DatabaseError where error.resultCode == .SQLITE_BUSY {
                        // The writer is checkpointing itself, past the upper bound: the copy is being made.
                        logger.debug("the history's WAL is being checkpointed by the writer", metadata: ["reason": "\(error)"])
                    } catch {
                        // The writer's own checkpoints past the upper bound keep the WAL bounded meanwhile.
                        logger.warning("cannot checkpoint the history's WAL", metadata: ["reason": "\(error)"])
                    }
                }
            }
            try? connection?.close()
        }
    }

    private static func open(_ path: String) throws -> DatabaseQueue {
        var configuration = Configuration()
        configuration.label = "parley.history.checkpoint"
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = NORMAL") }
        return try DatabaseQueue(path: path, configuration: configuration)
    }

    /// Makes `db` (the writer's connection) count its WAL pages after each commit instead of checkpointing in it.
    ///
    /// SQLite keeps a bare pointer to this checkpointer. It stays valid as long as the connection: the
    /// connection's configuration holds the `prepareDatabase` closure that calls this, and the closure holds the
    /// checkpointer.
    func install(on db: Database) {
        sqlite3_wal_hook(
            db.sqliteConnection,
            { context, connection, name, pages in
                guard let context else { return SQLITE_OK }
                Unmanaged<Checkpointer>.fromOpaque(context).takeUnretainedValue().committed(pages: pages, connection, name)
                return SQLITE_OK
            },
            Unmanaged.passUnretained(self).toOpaque())
    }

    /// After a commit of the writer, on its thread, with the pages now in the WAL.
    private func committed(pages: Int32, _ connection: OpaquePointer?, _ name: UnsafePointer<CChar>?) {
        if pages >= Self.pagesBeforeWriterCheckpoints {
            // A failure here is the same as a passive checkpoint that copied nothing: the next commit tries again.
            _ = sqlite3_wal_checkpoint_v2(connection, name, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
        } else if pages >= Self.pagesBeforeCheckpoint, asked.flag.compareExchange(expected: false, desired: true, ordering: .sequentiallyConsistent).exchanged {
            requests.yield(.checkpoint)
        }
    }

    /// Returns once the checkpoints commits asked for before the call are done (at once when stopped).
    func caughtUp() async {
        await withCheckedContinuation { continuation in
            if case .terminated = requests.yield(.caughtUp(continuation)) { continuation.resume() }
        }
    }

    /// A store dropped without being closed: the task ends with it, and closes its connection.
    deinit {
        requests.finish()
    }

    /// Stops checkpointing, after the one under way; the last connection's close checkpoints what is left.
    func stop() async {
        requests.finish()
        await checkpoints.value
    }
}
