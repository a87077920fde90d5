import Foundation
import GRDB
import NIOCore
import ParleyDebugger

// The rows of history.sqlite as GRDB record types: columns are read and written by name (the coding keys), never
// by position. The tables are described in HistorySchema.

/// A row of `session`: one app connection, or one imported file.
struct SessionRecord: Codable, FetchableRecord, MutablePersistableRecord {
    static let databaseTableName = "session"

    var id: Int64?
    var peerID: String
    var appName: String
    var kind: SessionSummary.Kind
    var imported = false
    /// An import still in progress: invisible to every query until it commits.
    var importing = false
    var started: Timestamp
    var ended: Timestamp?

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
    var imported: Bool
    var started: Timestamp
    var ended: Timestamp?
    var entryCount: Int
    var bytes: Int64

    var summary: SessionSummary {
        SessionSummary(
            id: id, peerID: peerID, appName: appName, kind: kind, imported: imported, started: started.date,
            ended: ended?.date, entryCount: entryCount, bytes: bytes
        )
    }
}

/// A row of `entry`: the small columns of one state change, listed and paged without touching blobs.
struct EntryRecord: Codable, FetchableRecord, MutablePersistableRecord {
    static let databaseTableName = "entry"

    var sequence: Int64?
    var session: Int64
    var time: Timestamp
    var action: String
    var stateSize: Int
    var screenshotSize: Int

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
struct EntryContentRecord: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "entryContent"

    var sequence: Int64
    var state: Data
    var screenshot: Data
}

/// An entry joined with its content.
struct EntryWithContentRecord: Decodable, FetchableRecord {
    var sequence: Int64
    var session: Int64
    var time: Timestamp
    var action: String
    var stateSize: Int
    var screenshotSize: Int
    var state: Data
    var screenshot: Data

    var detail: EntryDetail {
        EntryDetail(
            summary: EntrySummary(
                sequence: sequence, session: session, time: time.date, action: action, stateSize: stateSize,
                screenshotSize: screenshotSize
            ),
            state: ByteBuffer(data: state), screenshot: ByteBuffer(data: screenshot)
        )
    }
}

/// The single row of `totals`, kept by triggers: what the retention limits are checked against.
struct TotalsRecord: Decodable, FetchableRecord, TableRecord {
    static let databaseTableName = "totals"

    var entries: Int
    var bytes: Int64
}

/// An entry's sequence and its size (state plus screenshot), for retention.
struct EntrySizeRecord: Decodable, FetchableRecord {
    var sequence: Int64
    var size: Int64
}

/// Stored as whole milliseconds since 1970, UTC (an INTEGER column).
extension Timestamp: Codable, DatabaseValueConvertible {
    var databaseValue: DatabaseValue { milliseconds.databaseValue }

    static func fromDatabaseValue(_ value: DatabaseValue) -> Timestamp? {
        Int64.fromDatabaseValue(value).map(Timestamp.init(milliseconds:))
    }

    init(from decoder: any Decoder) throws {
        self.init(milliseconds: try decoder.singleValueContainer().decode(Int64.self))
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(milliseconds)
    }
}

/// The session kind is stored as its raw value (`parley`, `original`).
extension SessionSummary.Kind: DatabaseValueConvertible {}
