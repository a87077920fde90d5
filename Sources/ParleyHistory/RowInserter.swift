import GRDB
import GRDBSQLite

/// One INSERT statement run row after row through SQLite's C API: what stores log records and spans, up to
/// thousands per transaction.
///
/// GRDB's `execute(arguments:)` wraps each row's values in `DatabaseValue`s, binds them through nested closures and
/// does its per-statement bookkeeping; for a batch of log records that cost twice what SQLite itself took
/// (docs/performance.md). Here each value is bound directly, and SQLite copies the text it is given. The statement
/// is prepared for this inserter alone, so GRDB's cached statements never see bindings it did not make.
struct RowInserter {
    private let statement: Statement
    private let db: Database
    private var column: Int32 = 0
    private var bindFailure: Int32 = SQLITE_OK

    init(_ sql: String, in db: Database) throws {
        statement = try db.makeStatement(sql: sql)
        self.db = db
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

    /// Stores the row bound since the last call; returns its rowid.
    mutating func insert() throws -> Int64 {
        defer {
            sqlite3_reset(handle)
            column = 0
            bindFailure = SQLITE_OK
        }
        let code = bindFailure == SQLITE_OK ? sqlite3_step(handle) : bindFailure
        guard code == SQLITE_DONE else {
            let message = db.sqliteConnection.flatMap { sqlite3_errmsg($0) }.map { String(cString: $0) }
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: message, sql: statement.sql)
        }
        return db.lastInsertedRowID
    }
}
