/// How much history parleyd keeps. When an append goes over either limit, the oldest entries (lowest sequence
/// numbers, whatever their session) are dropped until both hold again; the entry just appended is always kept,
/// even if it alone is larger than `maxBytes`.
public struct RetentionLimits: Sendable, Hashable, Codable {
    /// Entries kept at most.
    public var maxEntries: Int
    /// Bytes kept at most: states, screenshots, action texts, app names, and an estimate of each row's own cost
    /// (``HistorySchema/rowOverhead``), so the database file stays close to this (see docs/debugger.md).
    public var maxBytes: Int64

    public init(maxEntries: Int, maxBytes: Int64) {
        self.maxEntries = maxEntries
        self.maxBytes = maxBytes
    }

    /// 1 000 000 entries, 1 GiB. A person debugging looks back minutes to hours. Log records and spans count as
    /// entries, and an app that logs a few hundred lines a second would push its states out of a history of ten
    /// thousand within a minute; a million is hours of such an app, and listings page whatever the count. 1 GiB is
    /// a modest share of a developer machine's disk yet still holds about 200 entries of 5 MB states with
    /// screenshots, so for large states, and for most apps' logs, the byte limit is the one that applies.
    public static let `default` = RetentionLimits(maxEntries: 1_000_000, maxBytes: 1 << 30)

    /// Why limits cannot be used.
    public enum Problem: Sendable, Equatable, CustomStringConvertible {
        case tooFewEntries(Int)
        case tooFewBytes(Int64)

        public var description: String {
            switch self {
            case .tooFewEntries(let entries): "the history must keep at least 1 entry (maxEntries is \(entries))"
            case .tooFewBytes(let bytes): "the history must keep at least 1 byte (maxBytes is \(bytes))"
            }
        }
    }

    /// Why these limits cannot be used, or nil.
    public var problem: Problem? {
        if maxEntries < 1 { return .tooFewEntries(maxEntries) }
        if maxBytes < 1 { return .tooFewBytes(maxBytes) }
        return nil
    }
}
