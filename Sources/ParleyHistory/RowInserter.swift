import GRDB
import GRDBSQLite

/// Rows inserted through SQLite's C API, several to a statement: what stores log records and spans, up to thousands
/// per transaction.
///
/// GRDB's `execute(arguments:)` wraps each row's values in `DatabaseValue`s, binds them through nested closures and
/// does its per-statement bookkeeping; for a batch of log records that cost twice what SQLite itself took
/// (docs/performance.md). Here each value is bound directly, and SQLite copies the text it is given.
///
/// And a statement takes up to ``rowsPerStatement`` rows (`VALUES (…), (…), …`): each run of a statement opens a
/// cursor on the table and on each of its indexes, checks the session's row for the foreign key and reads and
/// writes `sqlite_sequence` for AUTOINCREMENT, and a row to itself paid all of that. The caller says how many rows
/// it will bind; the last statement takes what is left.
struct RowInserter {
    static let rowsPerStatement = 32

    private let db: Database
    private let table: String
    private let columns: [String]
    private var statement: Statement
    /// Rows the current statement takes, and how many of them are bound.
    private var rowsInStatement: Int
    private var rowsBound = 0
    /// Rows still to be bound after the current statement's.
    private var rowsAfter: Int
    private var column: Int32 = 0
    private var bindFailure: Int32 = SQLITE_OK
    /// The rowids of the rows stored so far, in the order bound.
    private var ids: [Int64] = []

    /// An inserter of `rows` rows into `table`, with a value for each of `columns` in each row.
    init(into table: String, columns: [String], rows: Int, in db: Database) throws {
        self.db = db
        self.table = table
        self.columns = columns
        rowsInStatement = min(rows, Self.rowsPerStatement)
        rowsAfter = rows - rowsInStatement
        statement = try Self.statement(table, columns, rows: max(1, rowsInStatement), in: db)
        ids.reserveCapacity(rows)
    }

    /// The statement for `rows` rows, prepared once per connection (GRDB's cache). Its bindings are cleared after
    /// each run, so that nothing else that asks the cache for the same SQL finds values of ours in it.
    private static func statement(_ table: String, _ columns: [String], rows: Int, in db: Database) throws -> Statement {
        let row = "(" + Array(repeating: "?", count: columns.count).joined(separator: ", ") + ")"
        let values = Array(repeating: row, count: rows).joined(separator: ", ")
        return try db.cachedStatement(sql: "INSERT INTO \(table) (\(columns.joined(separator: ", "))) VALUES \(values)")
    }

    private var handle: OpaquePointer { statement.sqliteStatement }

    /// SQLite's `SQLITE_TRANSIENT`: it copies the bytes before the call returns.
    private static var transient: sqlite3_destructor_type { unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self) }

    private mutating func next(_ code: Int32) {
        if code != SQLITE_OK, bindFailure == SQLITE_OK { bindFailure = code }
    }

    mutating func bind(_ value: Int64) {
        column += 1
        next(sqlite3_bind_int64(handle, column, value))
    }

    mutating func bind(_ value: Int) { bind(Int64(value)) }

    mutating func bind(_ value: String?) {
        column += 1
        guard var text = value else { return next(sqlite3_bind_null(handle, column)) }
        let column = column
        let code = text.withUTF8 { bytes -> Int32 in
            guard let length = Int32(exactly: bytes.count) else { return SQLITE_TOOBIG }
            return bytes.withMemoryRebound(to: CChar.self) { characters in
                // An empty buffer may have no address, and a null one would store NULL, not "".
                guard let start = characters.baseAddress else { return sqlite3_bind_text(handle, column, "", 0, Self.transient) }
                return sqlite3_bind_text(handle, column, start, length, Self.transient)
            }
        }
        next(code)
    }

    /// The ids of every row, once all the rows the inserter was made for are stored.
    func finish() -> [Int64] {
        assert(rowsBound == 0 && rowsAfter == 0 && column == 0, "RowInserter: fewer rows or values bound than declared")
        return ids
    }

    /// Ends the row bound since the last call; once the statement has all its rows, stores them. Throws if SQLite
    /// refuses them (then none of the statement's rows is stored; the caller's transaction decides about the rest).
    mutating func endRow() throws {
        rowsBound += 1
        assert(Int(column) == rowsBound * columns.count, "RowInserter: a row of \(columns.count) values expected")
        guard rowsBound == rowsInStatement else { return }
        let code = bindFailure == SQLITE_OK ? sqlite3_step(handle) : bindFailure
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
        column = 0
        bindFailure = SQLITE_OK
        rowsBound = 0
        guard code == SQLITE_DONE else {
            let message = db.sqliteConnection.flatMap { sqlite3_errmsg($0) }.map { String(cString: $0) }
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: message, sql: statement.sql)
        }
        // One writer, AUTOINCREMENT and no ids given: the statement's rows took consecutive ids, in order, the
        // last of them the connection's last inserted rowid. Checked, so that a conflict clause or a trigger
        // added one day cannot shift every id handed out.
        let changed = db.sqliteConnection.map { Int(sqlite3_changes($0)) } ?? 0
        guard changed == rowsInStatement else {
            throw DatabaseError(resultCode: .SQLITE_MISMATCH, message: "inserted \(changed) of \(rowsInStatement) rows", sql: statement.sql)
        }
        let last = db.lastInsertedRowID
        ids.append(contentsOf: (last - Int64(rowsInStatement) + 1)...last)
        if rowsAfter > 0, rowsAfter < rowsInStatement {
            statement = try Self.statement(table, columns, rows: rowsAfter, in: db)
            rowsInStatement = rowsAfter
        }
        rowsAfter -= min(rowsAfter, rowsInStatement)
    }
}
