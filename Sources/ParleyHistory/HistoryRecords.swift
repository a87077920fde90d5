import Foundation
import ParleyJSON
import ParleyTelemetry
import GRDB
import NIOCore
import ParleyDebugger

// The rows of history.sqlite as GRDB record types: columns are read and written by name, never by position. The
// tables are described in HistorySchema. The two records written for every state an app sends (an entry and its
// content) encode and decode their columns by hand rather than through Codable, which measured about a fifth
// slower on small appends (parley-debugger-bench).

/// A row of `session`: one app connection, or one imported file. Read on every append (is the session open?).
struct SessionRecord: FetchableRecord, MutablePersistableRecord {
    static let databaseTableName = "session"

    var id: Int64?
    var peerID: String
    var appName: String
    var kind: SessionSummary.Kind
    var host = ""
    var imported = false
    /// An import still in progress: invisible to every query until it commits.
    var importing = false
    var started: Timestamp
    var ended: Timestamp?

    init(
        id: Int64? = nil, peerID: String, appName: String, kind: SessionSummary.Kind, host: String = "", imported: Bool = false,
        importing: Bool = false, started: Timestamp, ended: Timestamp? = nil
    ) {
        self.id = id
        self.peerID = peerID
        self.appName = appName
        self.kind = kind
        self.host = host
        self.imported = imported
        self.importing = importing
        self.started = started
        self.ended = ended
    }

    init(row: Row) throws {
        id = row["id"]
        peerID = row["peerID"]
        appName = row["appName"]
        let kindName: String = row["kind"]
        guard let kind = SessionSummary.Kind(rawValue: kindName) else {
            throw HistoryStoreError.database(
                operation: "read a session",
                failure: DatabaseFailure(kind: .unreadableRow, message: "unknown session kind \"\(kindName)\"; was it written by a newer parleyd?"))
        }
        self.kind = kind
        host = row["host"]
        imported = row["imported"]
        importing = row["importing"]
        started = Timestamp(milliseconds: row["started"])
        ended = (row["ended"] as Int64?).map(Timestamp.init(milliseconds:))
    }

    func encode(to container: inout PersistenceContainer) throws {
        container["id"] = id
        container["peerID"] = peerID
        container["appName"] = appName
        container["kind"] = kind.rawValue
        container["host"] = host
        container["imported"] = imported
        container["importing"] = importing
        container["started"] = started.milliseconds
        container["ended"] = ended?.milliseconds
    }

    mutating func didInsert(_ inserted: InsertionSuccess) {
        id = inserted.rowID
    }
}

/// A session with the count and size of the entries it still has: what ``HistoryStore/sessionQuery`` selects.
struct SessionSummaryRecord: Decodable, FetchableRecord {
    var id: Int64
    var peerID: String
    var appName: String
    var kind: SessionSummary.Kind
    var host: String
    var imported: Bool
    var started: Timestamp
    var ended: Timestamp?
    var entryCount: Int
    var bytes: Int64
    var logCount: Int
    var spanCount: Int
    /// JSON of the resource's attributes, or empty.
    var resource: String

    var summary: SessionSummary {
        SessionSummary(
            id: id, peerID: peerID, appName: appName, kind: kind, host: host.isEmpty ? nil : host, imported: imported,
            started: started.date, ended: ended?.date, entryCount: entryCount, bytes: bytes, logCount: logCount, spanCount: spanCount,
            // Written by beginSession from attributes it encoded itself; unreadable text would mean another writer.
            resource: resource.isEmpty ? [:] : (try? JSONDecoder().decode(TelemetryAttributes.self, from: Data(resource.utf8))) ?? [:]
        )
    }
}

/// A row of `entry`: the small columns of one state change, listed and paged without touching blobs.
struct EntryRecord: FetchableRecord, MutablePersistableRecord {
    static let databaseTableName = "entry"

    var sequence: Int64?
    var session: Int64
    var time: Timestamp
    var action: String
    var stateSize: Int
    var screenshotSize: Int

    init(sequence: Int64? = nil, session: Int64, time: Timestamp, action: String, stateSize: Int, screenshotSize: Int) {
        self.sequence = sequence
        self.session = session
        self.time = time
        self.action = action
        self.stateSize = stateSize
        self.screenshotSize = screenshotSize
    }

    init(row: Row) throws {
        sequence = row["sequence"]
        session = row["session"]
        time = Timestamp(milliseconds: row["time"])
        action = row["action"]
        stateSize = row["stateSize"]
        screenshotSize = row["screenshotSize"]
    }

    func encode(to container: inout PersistenceContainer) throws {
        container["sequence"] = sequence
        container["session"] = session
        container["time"] = time.milliseconds
        container["action"] = action
        container["stateSize"] = stateSize
        container["screenshotSize"] = screenshotSize
    }

    mutating func didInsert(_ inserted: InsertionSuccess) {
        sequence = inserted.rowID
    }

    /// Only for rows read back from the table, where the sequence is always set.
    var summary: EntrySummary {
        EntrySummary(
            sequence: sequence ?? 0, session: session, time: time.date, action: action, stateSize: stateSize,
            screenshotSize: screenshotSize
        )
    }
}

/// A row of `entryContent`: the state JSON and the screenshot PNG of one entry.
struct EntryContentRecord: FetchableRecord, PersistableRecord {
    static let databaseTableName = "entryContent"

    var sequence: Int64
    var state: Data
    var screenshot: Data

    init(sequence: Int64, state: Data, screenshot: Data) {
        self.sequence = sequence
        self.state = state
        self.screenshot = screenshot
    }

    init(row: Row) throws {
        sequence = row["sequence"]
        state = row["state"]
        screenshot = row["screenshot"]
    }

    func encode(to container: inout PersistenceContainer) throws {
        container["sequence"] = sequence
        container["state"] = state
        container["screenshot"] = screenshot
    }
}

/// An entry joined with its content.
struct EntryWithContentRecord: FetchableRecord {
    var entry: EntryRecord
    var state: Data
    var screenshot: Data

    init(row: Row) throws {
        entry = try EntryRecord(row: row)
        state = row["state"]
        screenshot = row["screenshot"]
    }

    var detail: EntryDetail {
        EntryDetail(summary: entry.summary, state: ByteBuffer(data: state), screenshot: ByteBuffer(data: screenshot))
    }
}

/// The single row of `totals`, kept in step with the rows (HistorySchema): what the retention limits are checked
/// against (on every append).
struct TotalsRecord: FetchableRecord, TableRecord {
    static let databaseTableName = "totals"

    var entries: Int
    var bytes: Int64

    init(entries: Int, bytes: Int64) {
        self.entries = entries
        self.bytes = bytes
    }

    init(row: Row) throws {
        entries = row["entries"]
        bytes = row["bytes"]
    }
}

/// Stored as whole milliseconds since 1970, UTC (an INTEGER column), and coded as that number in the store's rows.
extension Timestamp: Codable, DatabaseValueConvertible {
    public var databaseValue: DatabaseValue { milliseconds.databaseValue }

    public static func fromDatabaseValue(_ value: DatabaseValue) -> Timestamp? {
        Int64.fromDatabaseValue(value).map(Timestamp.init(milliseconds:))
    }

    public init(from decoder: any Decoder) throws {
        self.init(milliseconds: try decoder.singleValueContainer().decode(Int64.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(milliseconds)
    }
}

/// The session kind is stored as its raw value (`parley`, `original`).
extension SessionSummary.Kind: DatabaseValueConvertible {}
