import Foundation
import Parley

// The commands the Listr example app answers; it answers each with a `CLIResponse` (module ParleyControl), the
// reply `parleyctl send` prints. Each has a short wire name (its Swift name) so that
// `parleyctl send AddItemCommand '{"title":"milk"}'` reaches it without a module prefix.
//
// JSON on the wire (the payload of each message):
//
//   AddItemCommand           {"title": "milk"}
//   ListItemsCommand         {}
//   DumpDatabaseCommand      {}
//   ReplaceDatabaseCommand   {"data": "<base64 of a ListrDatabase in JSON>"}
//
// and the reply to each:
//
//   CLIResponse              {"message": "text"}   or   {"data": "<base64>"}

/// Adds an item to the end of the list.
public struct AddItemCommand: Codable, Sendable, Hashable, NamedMessage {
    public static let messageType = "AddItemCommand"
    public var title: String
    public init(title: String) { self.title = title }
}

/// Asks for the list as text, one item per line.
public struct ListItemsCommand: Codable, Sendable, Hashable, NamedMessage {
    public static let messageType = "ListItemsCommand"
    public init() {}
}

/// Asks for the whole list as bytes (a ``ListrDatabase`` in JSON), for a file.
public struct DumpDatabaseCommand: Codable, Sendable, Hashable, NamedMessage {
    public static let messageType = "DumpDatabaseCommand"
    public init() {}
}

/// Replaces the whole list with `data`: bytes of a ``ListrDatabase`` in JSON, as ``DumpDatabaseCommand`` returns.
public struct ReplaceDatabaseCommand: Codable, Sendable, Hashable, NamedMessage {
    public static let messageType = "ReplaceDatabaseCommand"
    public var data: Data
    public init(data: Data) { self.data = data }
}

/// One entry of the to-do list.
public struct ListrItem: Codable, Sendable, Hashable {
    public var title: String
    public var done: Bool
    public init(title: String, done: Bool = false) {
        self.title = title
        self.done = done
    }
}

/// The whole list, as stored in the app's `--data` file and as ``DumpDatabaseCommand`` returns it:
/// `{"items": [{"title": "milk", "done": false}, …]}`.
public struct ListrDatabase: Codable, Sendable, Hashable {
    public var items: [ListrItem]
    public init(items: [ListrItem] = []) { self.items = items }

    /// Pretty, key-sorted JSON: stable bytes for files and diffs.
    public func encoded() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return try encoder.encode(self)
    }

    public static func decode(_ data: Data) throws -> ListrDatabase {
        try JSONDecoder().decode(ListrDatabase.self, from: data)
    }
}
