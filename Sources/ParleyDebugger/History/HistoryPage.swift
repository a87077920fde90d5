import Foundation

/// Which entries to list: the parameters of `HistoryStore.entries` and of the control request that asks for them.
public struct EntryQuery: Sendable, Hashable, Codable {
    /// One session's entries, or all sessions' when nil.
    public var session: Int64?
    /// Only the actions this filter includes (names resolved by the store's caller against the saved filters).
    public var filter: ActionTextFilter?
    /// Entries with a larger sequence number only: the cursor of the previous page (``HistoryPage/nextAfter``).
    public var after: Int64?
    /// Matching entries to skip first (for `--page N` style paging; `after` is cheaper for long histories).
    public var offset: Int
    /// At most this many entries.
    public var limit: Int
    /// Only entries recorded at or after this time (counted in `total` like the filter).
    public var since: Date?

    public init(
        session: Int64? = nil, filter: ActionTextFilter? = nil, after: Int64? = nil, offset: Int = 0, limit: Int = 100, since: Date? = nil
    ) {
        self.since = since
        self.session = session
        self.filter = filter
        self.after = after
        self.offset = offset
        self.limit = limit
    }
}

/// One page of a longer list, oldest first.
public struct HistoryPage<Item: Sendable & Codable>: Sendable, Codable {
    public var items: [Item]
    /// How many items match the query in all, on every page (not counting `after` and `offset`).
    public var total: Int
    /// Pass as `after` to get the next page; nil when this page is the last.
    public var nextAfter: Int64?

    public init(items: [Item], total: Int, nextAfter: Int64?) {
        self.items = items
        self.total = total
        self.nextAfter = nextAfter
    }
}

extension HistoryPage: Equatable where Item: Equatable {}
extension HistoryPage: Hashable where Item: Hashable {}
