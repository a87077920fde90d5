import Foundation
import GRDB
import Logging
import NIOCore
import ParleyBlocking
import ParleyDebugger
import ParleyJSON
import ParleyTelemetry
import Synchronization

/// parleyd's debugger history: sessions (one per app connection) and their entries (action, state JSON,
/// screenshot PNG), in SQLite at `<dataDirectory>/history.sqlite`.
///
/// * **Durability.** The database is in WAL mode with `synchronous = NORMAL`: a committed append survives a
///   crash or SIGKILL of parleyd (only a power loss may take the last commits).
/// * **Sequence numbers** are global and only grow (`AUTOINCREMENT`: never reused, even after retention or
///   deletes), so an entry number names one entry for good. The one exception is a number no one saw: an import
///   that fails gives back the session and entry numbers it took.
/// * **Listing never reads blobs.** Sizes live in the `entry` table and the state and screenshot in a separate
///   `entryContent` table, so listing or paging 1 000 entries reads the same few pages whether the states are
///   1 KB or 5 MB.
/// * **Crash recovery.** ``open(directory:limits:logger:)`` ends every session still open: only a parleyd that
///   stopped without ending them leaves sessions open, and none of their apps is connected to the new process.
///   Such a session's end is the time of its last entry (its start if it has none). Imports interrupted by the
///   crash are removed. Open the store from one process only.
/// * **Transactions.** Every method that writes does so in one transaction; when it throws, nothing of the call
///   was stored.
///
/// All methods are async and run on GRDB's own threads, never blocking Swift's cooperative pool.
public final class HistoryStore: Sendable {
    /// The file name inside the data directory.
    public static let fileName = "history.sqlite"

    /// A size for ``exportChunk(session:cursor:maxBytes:)`` that leaves room under the control socket's 64 MiB
    /// frame limit.
    public static let defaultExportChunkBytes = 16 << 20

    /// The longest action text stored. Action texts name what happened (`add("milk")`); one this long is a
    /// payload sent in the wrong field, and every listing would carry it.
    public static let maximumActionBytes = 16 << 10

    public let path: String
    /// Names this history database among others (the file's device and inode, taken when it is opened): another
    /// data directory, or a history deleted and made anew, is another file. What a browser keeps of an entry is
    /// tagged with it, because entry numbers start again in another history.
    public let identity: String
    let pool: DatabasePool
    let checkpointer: Checkpointer
    let logger: Logger
    private let currentLimits: Mutex<RetentionLimits>
    let telemetryCommits = Mutex(TelemetryCommits())

    private init(path: String, pool: DatabasePool, checkpointer: Checkpointer, limits: RetentionLimits, logger: Logger) {
        self.path = path
        var info = stat()
        // Unreadable (it was just opened, so hardly): a name of this run alone, which no other history shares.
        identity = stat(path, &info) == 0
            ? String(UInt64(info.st_dev), radix: 16) + "." + String(UInt64(info.st_ino), radix: 16) : UUID().uuidString
        self.pool = pool
        self.checkpointer = checkpointer
        self.currentLimits = Mutex(limits)
        self.logger = logger
    }

    /// Opens (creating if needed) `<directory>/history.sqlite`, migrates it, ends sessions left open by a previous
    /// process and applies `limits`. The directory must exist.
    public static func open(directory: String, limits: RetentionLimits = .default, logger: Logger = Logger(label: "parley.history")) async throws(HistoryStoreError) -> HistoryStore {
        if let problem = limits.problem { throw .invalidLimits(problem) }
        let path = URL(fileURLWithPath: directory).appendingPathComponent(fileName).path
        let pool: DatabasePool
        let checkpointer = Checkpointer(path: path, logger: logger)
        do {
            // Opening and migrating are synchronous file work: keep them off the cooperative pool.
            pool = try await BlockingPool.shared.run { try openPool(at: path, checkpointer: checkpointer) }
        } catch {
            await checkpointer.stop()
            throw .cannotOpen(path: path, failure: Self.failure(error))
        }
        let store = HistoryStore(path: path, pool: pool, checkpointer: checkpointer, limits: limits, logger: logger)
        do {
            try await store.recover()
            try await store.setLimits(limits)
        } catch {
            try? await store.close()
            throw error
        }
        return store
    }

    private static func openPool(at path: String, checkpointer: Checkpointer) throws -> DatabasePool {
        var configuration = Configuration()
        configuration.label = "parley.history"
        configuration.foreignKeysEnabled = true
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
            // The file gives back the pages retention frees (takes effect for a database created from now on), and
            // the WAL is cut back after each checkpoint: the limit holds for the files on disk, not only the rows.
            // These, and checkpoints on a connection of their own (Checkpointer), are settings of the writer's
            // connection; the pool's readers are read-only.
            guard !db.configuration.readonly else { return }
            try db.execute(sql: "PRAGMA auto_vacuum = INCREMENTAL")
            try db.execute(sql: "PRAGMA journal_size_limit = \(walSizeLimit)")
            checkpointer.install(on: db)
        }
        let pool = try DatabasePool(path: path, configuration: configuration)
        try HistorySchema.migrator.migrate(pool)
        return pool
    }

    /// Closes the database (waiting for reads in progress); the store cannot be used afterwards.
    public func close() async throws(HistoryStoreError) {
        let pool = self.pool
        await telemetryCommits.withLock { $0.writer }?.value
        await checkpointer.stop()
        do {
            try await BlockingPool.shared.run { try pool.close() }
        } catch {
            throw .database(operation: "close", failure: Self.failure(error))
        }
    }

    public var limits: RetentionLimits { currentLimits.withLock { $0 } }

    /// Changes the limits (on a configuration reload) and drops what the new ones do not allow at once.
    public func setLimits(_ limits: RetentionLimits) async throws(HistoryStoreError) {
        if let problem = limits.problem { throw .invalidLimits(problem) }
        currentLimits.withLock { $0 = limits }
        let dropped = try await write("apply the retention limits") { db in try Self.enforce(limits, keeping: Kept(), in: db) }
        if dropped > 0 {
            logger.info("history limits applied", metadata: ["dropped-entries": "\(dropped)", "max-entries": "\(limits.maxEntries)", "max-bytes": "\(limits.maxBytes)"])
        }
    }

    private func recover() async throws(HistoryStoreError) {
        let (closed, abandoned) = try await write("close sessions left open") { db -> (Int, Int) in
            try db.execute(
                sql: """
                    UPDATE session SET ended = MAX(started, COALESCE((SELECT MAX(time) FROM entry WHERE entry.session = session.id), started),
                        COALESCE((SELECT MAX(received) FROM logRecord WHERE logRecord.session = session.id), started),
                        COALESCE((SELECT MAX(received) FROM span WHERE span.session = session.id), started))
                    WHERE ended IS NULL AND importing = 0
                    """
            )
            let closed = db.changesCount
            for table in ["entry", "logRecord", "span"] {
                try db.execute(sql: "DELETE FROM \(table) WHERE session IN (SELECT id FROM session WHERE importing = 1)")
            }
            try db.execute(sql: "DELETE FROM session WHERE importing = 1")
            let abandoned = db.changesCount
            // Sessions that recorded nothing, left by a parleyd that stopped before it could remove them.
            try db.execute(sql: "DELETE FROM session WHERE imported = 0 AND \(Self.recordsNothing)")
            return (closed, abandoned)
        }
        if closed > 0 || abandoned > 0 {
            logger.info("history recovered after an unclean stop", metadata: ["sessions-closed": "\(closed)", "imports-removed": "\(abandoned)"])
        }
    }

    // MARK: - Sessions

    /// Starts a session for an app that has just connected (or, of kind otlp, a service instance that has just
    /// exported, with its resource's attributes).
    public func beginSession(
        peerID: String, appName: String, kind: SessionSummary.Kind, host: String? = nil, resource: TelemetryAttributes = [:],
        at start: Date = Date()
    ) async throws(HistoryStoreError) -> SessionSummary {
        let started = Timestamp(start)
        let resourceText = resource.isEmpty ? "" : ((try? JSONEncoder().encode(resource)).map { String(decoding: $0, as: UTF8.self) } ?? "")
        let record = try await write("begin a session") { db -> SessionRecord in
            var record = SessionRecord(peerID: peerID, appName: appName, kind: kind, host: host ?? "", started: started)
            try record.insert(db)
            if !resourceText.isEmpty, let id = record.id {
                try db.execute(sql: "UPDATE session SET resource = ? WHERE id = ?", arguments: [resourceText, id])
            }
            return record
        }
        return SessionSummary(id: record.id ?? 0, peerID: peerID, appName: appName, kind: kind, host: host, started: started.date, resource: resource)
    }

    /// Deletes an ended session with all its entries. A session still recording is refused
    /// (``HistoryStoreError/sessionLive(_:)``): its app would go on adding to a session nobody can see.
    public func deleteSession(_ id: Int64) async throws(HistoryStoreError) {
        try await write("delete a session") { db in
            try Self.requireSession(id, in: db)
            guard try Bool.fetchOne(db, sql: "SELECT ended IS NOT NULL FROM session WHERE id = ?", arguments: [id]) == true else {
                throw HistoryStoreError.sessionLive(id)
            }
            try Self.deleteRows(ofSession: id, in: db)
        }
    }

    /// A session's entries, log records and spans, then the session: in that order the totals triggers count them
    /// down.
    static func deleteRows(ofSession id: Int64, in db: Database) throws {
        for table in ["entry", "logRecord", "span"] {
            try db.execute(sql: "DELETE FROM \(table) WHERE session = ?", arguments: [id])
        }
        try db.execute(sql: "DELETE FROM session WHERE id = ?", arguments: [id])
    }

    /// Deletes every ended session that ended before `date`, with its entries; returns the ids deleted.
    public func deleteSessions(endedBefore date: Date) async throws(HistoryStoreError) -> [Int64] {
        let cutoff = Timestamp(date).milliseconds
        return try await write("prune sessions") { db -> [Int64] in
            let ids = try Int64.fetchAll(
                db, sql: "SELECT id FROM session WHERE importing = 0 AND ended IS NOT NULL AND ended < ? ORDER BY id", arguments: [cutoff]
            )
            for id in ids { try Self.deleteRows(ofSession: id, in: db) }
            return ids
        }
    }

    /// Marks a session ended (its app disconnected). Ending it again changes nothing. A session that recorded
    /// nothing (no state, log record or span) is deleted instead (an app reconnecting in a loop must not fill the
    /// history with empty sessions); the answer says whether it was.
    @discardableResult
    public func endSession(_ id: Int64, at end: Date = Date()) async throws(HistoryStoreError) -> Bool {
        let ended = Timestamp(end)
        return try await write("end a session") { db in
            try Self.requireSession(id, in: db)
            try db.execute(
                sql: "DELETE FROM session WHERE id = ? AND ended IS NULL AND \(Self.recordsNothing)", arguments: [id])
            if db.changesCount > 0 { return true }
            try db.execute(sql: "UPDATE session SET ended = ? WHERE id = ? AND ended IS NULL", arguments: [ended.milliseconds, id])
            return false
        }
    }

    /// Every session, oldest first, with the count and size of the entries it still has.
    /// Sessions in id order: all of them, or those after `after`, at most `limit`.
    public func sessions(after: Int64? = nil, limit: Int? = nil) async throws(HistoryStoreError) -> [SessionSummary] {
        try await read("list sessions") { db in
            try SessionSummaryRecord.fetchAll(
                db, sql: Self.sessionQuery + " AND s.id > ? GROUP BY s.id ORDER BY s.id LIMIT ?",
                arguments: [after ?? Int64.min, limit ?? -1]
            ).map(\.summary)
        }
    }

    /// Sessions newest first: those with an id below `before` (all when nil), at most `limit`.
    public func sessions(before: Int64?, limit: Int) async throws(HistoryStoreError) -> [SessionSummary] {
        try await read("list sessions") { db in
            try SessionSummaryRecord.fetchAll(
                db, sql: Self.sessionQuery + " AND s.id < ? GROUP BY s.id ORDER BY s.id DESC LIMIT ?",
                arguments: [before ?? Int64.max, limit]
            ).map(\.summary)
        }
    }

    public func session(_ id: Int64) async throws(HistoryStoreError) -> SessionSummary {
        let found = try await read("read a session") { db in
            try SessionSummaryRecord.fetchOne(db, sql: Self.sessionQuery + " AND s.id = ? GROUP BY s.id", arguments: [id])?.summary
        }
        guard let found else { throw .noSuchSession(id) }
        return found
    }

    /// Sessions with their entry count and size, as ``SessionSummaryRecord``s; callers add conditions and GROUP BY.
    static let sessionQuery = """
        SELECT s.id, s.peerID, s.appName, s.kind, s.host, s.imported, s.started, s.ended, s.resource,
               COUNT(e.sequence) AS entryCount, COALESCE(SUM(e.stateSize + e.screenshotSize), 0) AS bytes,
               (SELECT COUNT(*) FROM logRecord WHERE logRecord.session = s.id) AS logCount,
               (SELECT COUNT(*) FROM span WHERE span.session = s.id) AS spanCount
        FROM session s LEFT JOIN entry e ON e.session = s.id
        WHERE s.importing = 0
        """

    /// True of a `session` row that holds no state, log record or span.
    static let recordsNothing = """
        NOT EXISTS (SELECT 1 FROM entry WHERE entry.session = session.id)
        AND NOT EXISTS (SELECT 1 FROM logRecord WHERE logRecord.session = session.id)
        AND NOT EXISTS (SELECT 1 FROM span WHERE span.session = session.id)
        """

    static func requireSession(_ id: Int64, in db: Database) throws {
        guard try Bool.fetchOne(db, sql: "SELECT 1 FROM session WHERE id = ? AND importing = 0", arguments: [id]) != nil else {
            throw HistoryStoreError.noSuchSession(id)
        }
    }

    /// `session` is one an app is recording into: stored, not being imported, not ended.
    static func requireOpenSession(_ session: Int64, in db: Database) throws {
        // Plain SQL rather than the query interface: this runs for every state and batch an app sends.
        guard let open = try SessionRecord.fetchOne(db, sql: "SELECT * FROM session WHERE id = ?", arguments: [session]), !open.importing else {
            throw HistoryStoreError.noSuchSession(session)
        }
        guard open.ended == nil else { throw HistoryStoreError.sessionEnded(session) }
    }

    // MARK: - Entries

    /// Records a state change of an open session, then applies the retention limits.
    ///
    /// The state must be JSON (it is validated here, so that every stored state can be diffed and exported);
    /// it is stored byte for byte.
    public func append(_ record: StateRecord, to session: Int64, at date: Date = Date()) async throws(HistoryStoreError) -> EntrySummary {
        let time = Timestamp(date)
        let state = Data(record.state.readableBytesView)
        let screenshot = Data(record.screenshot.readableBytesView)
        let limits = self.limits
        let (sequence, dropped) = try await write("append an entry") { db -> (Int64, Int) in
            guard record.action.utf8.count <= Self.maximumActionBytes else {
                throw HistoryStoreError.actionTooLong(bytes: record.action.utf8.count, limit: Self.maximumActionBytes)
            }
            // Validated here, on the database's own queue: a 60 MiB state takes a while to scan, and the caller may
            // be on an event loop serving other connections.
            if case .failure(let error) = Result(catching: { () throws(JSONError) in try JSONSkimmer.validate(record.state) }) {
                throw HistoryStoreError.invalidState(error)
            }
            try Self.requireOpenSession(session, in: db)
            let sequence = try Self.insertEntry(session: session, time: time, action: record.action, state: state, screenshot: screenshot, in: db)
            return (sequence, try Self.enforce(limits, keeping: Kept(entry: sequence), in: db))
        }
        if dropped > 0 {
            logger.debug("history retention dropped entries", metadata: ["dropped-entries": "\(dropped)"])
            await giveBackFreePages()
        }
        return EntrySummary(sequence: sequence, session: session, time: time.date, action: record.action, stateSize: state.count, screenshotSize: screenshot.count)
    }

    static func insertEntry(session: Int64, time: Timestamp, action: String, state: Data, screenshot: Data, in db: Database) throws -> Int64 {
        var entry = EntryRecord(session: session, time: time, action: action, stateSize: state.count, screenshotSize: screenshot.count)
        try entry.insert(db)
        let sequence = entry.sequence ?? db.lastInsertedRowID
        try EntryContentRecord(sequence: sequence, state: state, screenshot: screenshot).insert(db)
        return sequence
    }

    /// A page of entry summaries, oldest first. `namedFilters` are the saved filters that `query.filter` may
    /// refer to. Reads only the small columns: no state or screenshot is loaded.
    public func entries(_ query: EntryQuery, namedFilters: [String: ActionTextFilter] = [:]) async throws(HistoryStoreError) -> HistoryPage<EntrySummary> {
        var conditions = ["entry.session NOT IN (SELECT id FROM session WHERE importing = 1)"]
        var arguments = StatementArguments()
        if let session = query.session {
            conditions.append("entry.session = ?")
            arguments += [session]
        }
        if let since = query.since {
            conditions.append("entry.time >= ?")
            arguments += [Timestamp(since).milliseconds]
        }
        if let filter = query.filter {
            conditions.append(try Self.condition(for: filter, namedFilters: namedFilters, arguments: &arguments))
        }
        let matching = conditions.joined(separator: " AND ")
        var pageConditions = conditions
        var pageArguments = arguments
        if let after = query.after {
            pageConditions.append("entry.sequence > ?")
            pageArguments += [after]
        }
        // One row more than asked tells whether another page follows.
        pageArguments += [max(0, query.limit) + 1, max(0, query.offset)]
        let page = pageConditions.joined(separator: " AND ")
        let session = query.session
        let limit = max(0, query.limit)
        let countArguments = arguments
        let rowArguments = pageArguments
        return try await read("list entries") { db in
            if let session { try Self.requireSession(session, in: db) }
            let total = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM entry WHERE \(matching)", arguments: countArguments) ?? 0
            var items = try EntryRecord.fetchAll(
                db,
                sql: "SELECT entry.* FROM entry WHERE \(page) ORDER BY entry.sequence LIMIT ? OFFSET ?",
                arguments: rowArguments
            ).map(\.summary)
            let more = items.count > limit
            if more { items.removeLast() }
            return HistoryPage(items: items, total: total, nextAfter: more ? items.last?.sequence : nil)
        }
    }

    /// ``entries(_:namedFilters:)`` with the query's fields as arguments.
    public func entries(
        session: Int64? = nil, filter: ActionTextFilter? = nil, after: Int64? = nil, offset: Int = 0, limit: Int = 100,
        namedFilters: [String: ActionTextFilter] = [:]
    ) async throws(HistoryStoreError) -> HistoryPage<EntrySummary> {
        try await entries(EntryQuery(session: session, filter: filter, after: after, offset: offset, limit: limit), namedFilters: namedFilters)
    }

    /// One entry with its state and (unless `includeScreenshot` is false) its screenshot.
    public func entry(_ sequence: Int64, includeScreenshot: Bool = true) async throws(HistoryStoreError) -> EntryDetail {
        let found = try await read("read an entry") { db -> EntryDetail? in
            let screenshot = includeScreenshot ? "c.screenshot" : "x''"
            return try EntryWithContentRecord.fetchOne(
                db,
                sql: """
                    SELECT entry.*, c.state, \(screenshot) AS screenshot FROM entry JOIN entryContent c ON c.sequence = entry.sequence
                    WHERE entry.sequence = ? AND entry.session NOT IN (SELECT id FROM session WHERE importing = 1)
                    """,
                arguments: [sequence]
            )?.detail
        }
        guard let found else { throw .noSuchEntry(sequence) }
        return found
    }

    /// The entry recorded just before `sequence` in the same session (what a diff compares with by default), or
    /// nil for a session's first entry (or when retention has dropped the one before).
    public func predecessor(of sequence: Int64) async throws(HistoryStoreError) -> EntrySummary? {
        let found = try await read("find the previous entry") { db -> EntrySummary?? in
            guard let session = try Int64.fetchOne(db, sql: "SELECT session FROM entry WHERE sequence = ?", arguments: [sequence]) else {
                return .none
            }
            let previous = try EntryRecord.fetchOne(
                db,
                sql: "SELECT * FROM entry WHERE session = ? AND sequence < ? ORDER BY sequence DESC LIMIT 1",
                arguments: [session, sequence]
            )
            return .some(previous?.summary)
        }
        guard let found else { throw .noSuchEntry(sequence) }
        return found
    }

    /// The entries recorded just before and just after `sequence` in its session (nil at either end).
    public func neighbours(of sequence: Int64) async throws(HistoryStoreError) -> (previous: Int64?, next: Int64?) {
        let found = try await read("find an entry's neighbours") { db -> (Int64?, Int64?)? in
            guard let session = try Int64.fetchOne(db, sql: "SELECT session FROM entry WHERE sequence = ?", arguments: [sequence]) else {
                return nil
            }
            let previous = try Int64.fetchOne(
                db, sql: "SELECT MAX(sequence) FROM entry WHERE session = ? AND sequence < ?", arguments: [session, sequence])
            let next = try Int64.fetchOne(
                db, sql: "SELECT MIN(sequence) FROM entry WHERE session = ? AND sequence > ?", arguments: [session, sequence])
            return (previous, next)
        }
        guard let found else { throw .noSuchEntry(sequence) }
        return found
    }

    /// Where entry `sequence` is among the entries of `session` that pass `filter`: how many of them come before
    /// it, and whether it passes itself. Nil if it is not in the session.
    public func position(
        of sequence: Int64, session: Int64, filter: ActionTextFilter?, namedFilters: [String: ActionTextFilter] = [:]
    ) async throws(HistoryStoreError) -> (offset: Int, matches: Bool)? {
        var condition = "entry.session = ?"
        var arguments: StatementArguments = [session]
        if let filter {
            condition += " AND " + (try Self.condition(for: filter, namedFilters: namedFilters, arguments: &arguments))
        }
        let matching = condition
        let matchingArguments = arguments
        return try await read("find an entry's position") { db -> (Int, Bool)? in
            try Self.requireSession(session, in: db)
            guard try Bool.fetchOne(db, sql: "SELECT 1 FROM entry WHERE session = ? AND sequence = ?", arguments: [session, sequence]) != nil else {
                return nil
            }
            let matches = try Bool.fetchOne(
                db, sql: "SELECT 1 FROM entry WHERE \(matching) AND entry.sequence = ?", arguments: matchingArguments + [sequence]
            ) != nil
            let before = try Int.fetchOne(
                db, sql: "SELECT COUNT(*) FROM entry WHERE \(matching) AND entry.sequence < ?", arguments: matchingArguments + [sequence]) ?? 0
            return (before, matches)
        }
    }

    /// The SQL condition on `entry.action` for `filter`, its names resolved against `namedFilters`.
    private static func condition(
        for filter: ActionTextFilter, namedFilters: [String: ActionTextFilter], arguments: inout StatementArguments
    ) throws(HistoryStoreError) -> String {
        do {
            return ActionFilterSQL.condition(for: try filter.resolved(in: namedFilters), column: "entry.action", arguments: &arguments)
        } catch {
            throw .invalidFilter(error)
        }
    }

    /// Entries and bytes in the whole history (what the limits are compared with).
    public func totals() async throws(HistoryStoreError) -> (entries: Int, bytes: Int64) {
        try await read("count the history") { db in
            let totals = try Self.totals(in: db)
            return (totals.entries, totals.bytes)
        }
    }

    /// The newest entry's sequence number, nil when the history is empty.
    public func newestSequence() async throws(HistoryStoreError) -> Int64? {
        try await read("find the newest entry") { db in try Int64.fetchOne(db, sql: "SELECT MAX(sequence) FROM entry") }
    }

    /// The `totals` row; the schema creates it with the table, so it is always there.
    static func totals(in db: Database) throws -> TotalsRecord {
        try TotalsRecord.fetchOne(db, sql: "SELECT entries, bytes FROM totals") ?? TotalsRecord(entries: 0, bytes: 0)
    }

    // MARK: - Retention

    /// The WAL is truncated to this after a checkpoint.
    public static let walSizeLimit = 4 << 20

    /// Returns the pages retention freed to the file system, outside the append's transaction (SQLite does not
    /// vacuum inside one). A failure costs only disk space, so it is logged, not thrown.
    func giveBackFreePages() async {
        do {
            try await pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA incremental_vacuum") }
        } catch {
            logger.warning("cannot give the history's free pages back to the disk", metadata: ["reason": "\(error)"])
        }
    }

    /// Bytes of the database file and its WAL now.
    public var fileBytes: Int64 {
        [path, path + "-wal"].reduce(0) { total, file in
            total + ((try? FileManager.default.attributesOfItem(atPath: file)[.size] as? Int64) ?? 0)
        }
    }

    /// What retention must keep: the first entry, log record and span of what is being stored (and all after).
    struct Kept: Sendable {
        var entry: Int64?
        var log: Int64?
        var span: Int64?
    }

    /// Drops the oldest states, log records and spans, together in the order parleyd received them, until `limits`
    /// hold; never what `keeping` names. Forgets ended sessions left with nothing by it. Returns how many it
    /// dropped.
    ///
    /// Each kind is walked in id order (the order it arrived in) and the three are merged by the time they were
    /// received (a state's recorded time, a log record's or span's `received`), so a chatty app's log lines push
    /// out old log lines and old states alike, oldest first.
    static func enforce(_ limits: RetentionLimits, keeping kept: Kept, in db: Database) throws -> Int {
        let totals = try Self.totals(in: db)
        var excessEntries = totals.entries - limits.maxEntries
        var excessBytes = totals.bytes - limits.maxBytes
        guard excessEntries > 0 || excessBytes > 0 else { return 0 }
        // One cursor per kind: id, receipt time, size; at the kept id the kind has nothing more to give.
        let kinds: [(table: String, kept: Int64?, sql: String)] = [
            ("entry", kept.entry, "SELECT sequence, time, \(HistorySchema.entryBytes("entry")) FROM entry ORDER BY sequence"),
            ("logRecord", kept.log, "SELECT id, received, size FROM logRecord ORDER BY id"),
            ("span", kept.span, "SELECT id, received, size FROM span ORDER BY id"),
        ]
        let cursors = try kinds.map { try Row.fetchCursor(db, sql: $0.sql) }
        var heads: [(id: Int64, received: Int64, size: Int64)?] = []
        func advance(_ kind: Int) throws {
            if let row = try cursors[kind].next(), row[0] as Int64 != kinds[kind].kept {
                heads[kind] = (row[0], row[1], row[2])
            } else {
                heads[kind] = nil
            }
        }
        for kind in kinds.indices {
            heads.append(nil)
            try advance(kind)
        }
        var cutoffs: [Int64?] = Array(repeating: nil, count: kinds.count)
        var dropped = 0
        while excessEntries > 0 || excessBytes > 0 {
            // The oldest head; on equal times states first, then log records, then spans (the timeline's order).
            guard let kind = heads.indices.filter({ heads[$0] != nil }).min(by: { heads[$0]!.received < heads[$1]!.received }),
                let head = heads[kind]
            else { break }
            cutoffs[kind] = head.id
            dropped += 1
            excessEntries -= 1
            excessBytes -= head.size
            try advance(kind)
        }
        var touched = Set<Int64>()
        for (kind, cutoff) in zip(kinds, cutoffs) {
            guard let cutoff else { continue }
            let key = kind.table == "entry" ? "sequence" : "id"
            touched.formUnion(try Int64.fetchAll(db, sql: "SELECT DISTINCT session FROM \(kind.table) WHERE \(key) <= ?", arguments: [cutoff]))
            try db.execute(sql: "DELETE FROM \(kind.table) WHERE \(key) <= ?", arguments: [cutoff])
        }
        for session in touched {
            try db.execute(
                sql: "DELETE FROM session WHERE id = ? AND ended IS NOT NULL AND importing = 0 AND \(recordsNothing)", arguments: [session])
        }
        return dropped
    }

    // MARK: - Database access

    func write<T: Sendable>(_ operation: String, _ body: @escaping @Sendable (Database) throws -> T) async throws(HistoryStoreError) -> T {
        do {
            return try await pool.write(body)
        } catch let error as HistoryStoreError {
            throw error
        } catch {
            throw .database(operation: operation, failure: Self.failure(error))
        }
    }

    func read<T: Sendable>(_ operation: String, _ body: @escaping @Sendable (Database) throws -> T) async throws(HistoryStoreError) -> T {
        do {
            return try await pool.read(body)
        } catch let error as HistoryStoreError {
            throw error
        } catch {
            throw .database(operation: operation, failure: Self.failure(error))
        }
    }

    /// GRDB's error, mapped to a kind a caller can match; SQLite's numeric codes stay here.
    static func failure(_ error: any Error) -> DatabaseFailure {
        guard let error = error as? DatabaseError else { return DatabaseFailure(kind: .other(code: -1), message: "\(error)") }
        let message = error.message ?? "\(error)"
        let kind: DatabaseFailure.Kind =
            switch error.resultCode {
            case .SQLITE_FULL: .diskFull
            case .SQLITE_READONLY, .SQLITE_PERM, .SQLITE_CANTOPEN, .SQLITE_AUTH: .notWritable
            case .SQLITE_CORRUPT, .SQLITE_NOTADB: .corrupt
            case .SQLITE_BUSY, .SQLITE_LOCKED: .busy
            case .SQLITE_IOERR: .ioError
            default: .other(code: error.resultCode.primaryResultCode.rawValue)
            }
        return DatabaseFailure(kind: kind, message: message)
    }
}

extension ByteBuffer {
    init(data: Data) {
        self.init(bytes: data)
    }
}
