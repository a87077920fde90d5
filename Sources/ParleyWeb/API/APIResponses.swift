import ParleyDebugger
import ParleyDrawer
import ParleyJSON

// The JSON documents the API answers with (docs/web.md), and the two bodies it reads (ReplayTarget, SetBody).

struct SessionPage: Encodable {
    var sessions: [WebSession]
    var nextAfter: Int64?
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(sessions, forKey: .sessions)
        try container.encode(nextAfter, forKey: .nextAfter)
    }
    enum CodingKeys: String, CodingKey { case sessions, nextAfter }
}

struct EntryPage: Encodable {
    var entries: [EntrySummary]
    var total: Int
    var offset: Int
}

struct EntryPosition: Encodable {
    var offset: Int
    var matches: Bool
}

struct ReplayTarget: Decodable {
    var to: String?
    var all: Bool?
}

struct ImportAnswer: Encodable {
    var session: SessionSummary
    var alreadyInHistory: Bool
}

struct PeerList: Encodable { var peers: [WebPeer] }

struct DrawerList: Encodable { var drawers: [AppDrawer] }

struct SetBody: Decodable { var value: DrawerValue }

struct NamedFilter: Encodable {
    var name: String
    var filter: ActionTextFilter
}

struct FilterList: Encodable { var filters: [NamedFilter] }

struct SessionChange: Encodable {
    var change: String
    var session: WebSession
}

struct SessionDeleted: Encodable {
    var change = "deleted"
    var session: ID
    struct ID: Encodable { var id: Int64 }
}

