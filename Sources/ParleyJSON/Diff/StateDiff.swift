import Foundation
import NIOCore

/// The property-level difference between two JSON states: which values changed, appeared or disappeared, by path.
///
/// * Objects are compared member by member, by name (member order does not matter; of duplicate names the last
///   counts, as in ``JSONValue``). Members only in the new state are `added`, only in the old one `removed`.
/// * Arrays are compared by index: element `i` against element `i`; when the count differs, a `countChanged`
///   change on the array comes first, then the changed elements, then the `added` or `removed` tail.
/// * A value whose JSON type changed (including to or from `null`) is one `typeChanged` change; its insides are
///   not compared further.
/// * Numbers compare by decimal value (`1.0` equals `1`), strings by Unicode scalars after unescaping.
///
/// The values in a change are ``JSONFragment``s: the exact JSON text from the state, compacted, so that numbers
/// keep their precision in the JSON rendering too.
///
/// Identical subtrees are recognised by comparing their bytes, and only the parts that differ are examined
/// further, so a small change in a large state costs little more than reading the two states once.
public struct StateDiff: Sendable, Equatable, Codable, CustomStringConvertible {
    public struct Change: Sendable, Equatable, Codable {
        public enum Kind: String, Sendable, Codable {
            /// Same type, different value.
            case changed
            /// The JSON type differs, `null` included.
            case typeChanged
            case added
            case removed
            /// An array's element count differs (`oldCount`, `newCount`).
            case countChanged
        }

        public var path: StatePath
        public var kind: Kind
        /// The value before (nil for `added` and `countChanged`).
        public var old: JSONFragment?
        /// The value after (nil for `removed` and `countChanged`).
        public var new: JSONFragment?
        public var oldCount: Int?
        public var newCount: Int?

        public init(path: StatePath, kind: Kind, old: JSONFragment? = nil, new: JSONFragment? = nil, oldCount: Int? = nil, newCount: Int? = nil) {
            self.path = path
            self.kind = kind
            self.old = old
            self.new = new
            self.oldCount = oldCount
            self.newCount = newCount
        }

        private enum EncodedKeys: String, CodingKey { case path, pathText, kind, old, new, oldCount, newCount }

        /// The path also as text (`items[2].title`): what a person reads and a tree matches, written once here so
        /// that `parleyctl diff --json` and the web API's diff carry the same keys. Decoding ignores it.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: EncodedKeys.self)
            try container.encode(path, forKey: .path)
            try container.encode(path.description, forKey: .pathText)
            try container.encode(kind, forKey: .kind)
            try container.encodeIfPresent(old, forKey: .old)
            try container.encodeIfPresent(new, forKey: .new)
            try container.encodeIfPresent(oldCount, forKey: .oldCount)
            try container.encodeIfPresent(newCount, forKey: .newCount)
        }
    }

    /// In the order a reader meets them: depth first, members in the new state's order, then removed members.
    public var changes: [Change]

    public var isEmpty: Bool { changes.isEmpty }

    public init(changes: [Change]) {
        self.changes = changes
    }

    /// The difference from `old` to `new`, both JSON documents (validated here; see ``StateDiffError``).
    public init(old: ByteBuffer, new: ByteBuffer, depthLimit: Int = JSONLimits.defaultDepth) throws(StateDiffError) {
        switch Self.changes(old: old, new: new, depthLimit: depthLimit, deadline: nil) {
        case .success(let changes): self.changes = changes
        case .failure(.invalid(let error)): throw error
        // Without a deadline there is no time limit to pass.
        case .failure(.timedOut): self.changes = []
        }
    }

    /// The difference, given up once `timeLimit` has passed: then ``StateDiffTimeLimitExceeded`` is thrown. The
    /// clock is read every few thousand values compared, so the limit is kept to within milliseconds.
    public init(old: ByteBuffer, new: ByteBuffer, timeLimit: Duration, depthLimit: Int = JSONLimits.defaultDepth) throws {
        switch Self.changes(old: old, new: new, depthLimit: depthLimit, deadline: .now + timeLimit) {
        case .success(let changes): self.changes = changes
        case .failure(.invalid(let error)): throw error
        case .failure(.timedOut): throw StateDiffTimeLimitExceeded(limit: timeLimit)
        }
    }

    private enum Failure: Error {
        case invalid(StateDiffError)
        case timedOut
    }

    private static func changes(old: ByteBuffer, new: ByteBuffer, depthLimit: Int, deadline: ContinuousClock.Instant?) -> Result<[Change], Failure> {
        old.withUnsafeReadableBytes { oldRaw in
            new.withUnsafeReadableBytes { newRaw in
                var oldScanner = JSONScanner(oldRaw.assumingMemoryBound(to: UInt8.self), depthLimit: depthLimit, indexingContainers: true)
                var newScanner = JSONScanner(newRaw.assumingMemoryBound(to: UInt8.self), depthLimit: depthLimit, indexingContainers: true)
                do throws(JSONError) {
                    _ = try oldScanner.validateDocument()
                } catch {
                    return .failure(.invalid(StateDiffError(side: .old, error: error)))
                }
                do throws(JSONError) {
                    _ = try newScanner.validateDocument()
                } catch {
                    return .failure(.invalid(StateDiffError(side: .new, error: error)))
                }
                var differ = StateDiffer(old: oldScanner, new: newScanner, deadline: deadline)
                let oldStart = oldScanner.skipWhitespace(from: 0)
                let newStart = newScanner.skipWhitespace(from: 0)
                differ.compare(oldStart..<oldScanner.skipValue(at: oldStart), newStart..<newScanner.skipValue(at: newStart))
                return differ.timedOut ? .failure(.timedOut) : .success(differ.changes)
            }
        }
    }

    public var description: String { text() }
}

/// The exact JSON text of one value, compacted (whitespace between tokens removed; strings and numbers as the
/// state spelled them). Encodes as a JSON string holding that text, so any JSON tool can carry it without
/// rounding numbers, and the reader parses it when it needs the value.
public struct JSONFragment: Sendable, Hashable, Codable, CustomStringConvertible {
    public var text: String

    public init(text: String) {
        self.text = text
    }

    public init(_ value: JSONValue) {
        self.text = value.jsonText()
    }

    public init(from decoder: any Decoder) throws {
        text = try decoder.singleValueContainer().decode(String.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(text)
    }

    /// The JSON type, from the first character.
    public var kind: JSONKind { JSONKind(firstByte: text.utf8.first) }

    public func value() throws(JSONError) -> JSONValue {
        try JSONValue(parsing: text.utf8)
    }

    public var description: String { text }
}

/// One of the two states given to ``StateDiff`` is not JSON.
public struct StateDiffError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Side: String, Sendable, Hashable {
        case old, new
    }

    public var side: Side
    public var error: JSONError

    public init(side: Side, error: JSONError) {
        self.side = side
        self.error = error
    }

    public var description: String { "cannot diff: the \(side) state is not valid JSON (\(error))" }
}

/// A diff gave up: it ran longer than its time limit (`diffTimeLimit` in parleyd).
public struct StateDiffTimeLimitExceeded: Error, Sendable, Hashable, CustomStringConvertible {
    public var limit: Duration
    public init(limit: Duration) { self.limit = limit }
    public var description: String { "the diff ran longer than its time limit (\(limit))" }
}

/// Walks two validated documents side by side.
struct StateDiffer {
    let old: JSONScanner
    let new: JSONScanner
    var changes: [StateDiff.Change] = []
    /// When to give up (nil: never); checked every ``deadlineCheckInterval`` values compared.
    private let deadline: ContinuousClock.Instant?
    private var compared = 0
    private(set) var timedOut = false
    private static let deadlineCheckInterval = 4096
    /// The path to the values being compared, with member names still as byte ranges: most members compared are
    /// equal, and only a recorded change needs its path as text.
    private var path: [Step] = []

    private enum Step {
        case name(MemberName)
        case index(Int)
    }

    /// Objects with at most this many members match names by linear search, cheaper than hashing.
    private static let linearSearchLimit = 16

    init(old: JSONScanner, new: JSONScanner, deadline: ContinuousClock.Instant? = nil) {
        self.old = old
        self.new = new
        self.deadline = deadline
    }

    mutating func compare(_ before: Range<Int>, _ after: Range<Int>) {
        if timedOut { return }
        compared &+= 1
        if compared % Self.deadlineCheckInterval == 0, let deadline, ContinuousClock.now >= deadline {
            timedOut = true
            return
        }
        if JSONScanner.sameBytes(old.bytes, before, new.bytes, after) { return }
        let kind = old.kind(at: before.lowerBound)
        guard kind == new.kind(at: after.lowerBound) else {
            record(.typeChanged, old: before, new: after)
            return
        }
        switch kind {
        case .object:
            compareObjects(before, after)
        case .array:
            compareArrays(before, after)
        case .string:
            if !sameString(before, after) { record(.changed, old: before, new: after) }
        case .number:
            let oldValue = CanonicalDecimal(UnsafeBufferPointer(rebasing: old.bytes[before]))
            let newValue = CanonicalDecimal(UnsafeBufferPointer(rebasing: new.bytes[after]))
            if oldValue != newValue { record(.changed, old: before, new: after) }
        case .bool, .null:
            // Different bytes: true against false (two nulls are always the same bytes).
            record(.changed, old: before, new: after)
        }
    }

    /// Members match by name; of duplicate names the last counts. Reported in the new object's order, then the
    /// removed members in the old one's.
    private mutating func compareObjects(_ before: Range<Int>, _ after: Range<Int>) {
        let oldMembers = old.memberRanges(ofObjectAt: before.lowerBound)
        let newMembers = new.memberRanges(ofObjectAt: after.lowerBound)
        let oldNames = oldMembers.map { MemberName(old, $0) }
        let newNames = newMembers.map { MemberName(new, $0) }
        let matches = Self.lastOccurrences(of: newNames, in: oldNames)
        let newLast = Self.lastOccurrences(of: newNames, in: newNames)
        var oldMatched = [Bool](repeating: false, count: oldMembers.count)
        for index in newMembers.indices where newLast[index] == index {
            path.append(.name(newNames[index]))
            if let match = matches[index] {
                oldMatched[match] = true
                compare(oldMembers[match].value, newMembers[index].value)
            } else {
                record(.added, old: nil, new: newMembers[index].value)
            }
            path.removeLast()
        }
        let oldLast = Self.lastOccurrences(of: oldNames, in: oldNames)
        for index in oldMembers.indices where oldLast[index] == index && !oldMatched[index] {
            path.append(.name(oldNames[index]))
            record(.removed, old: oldMembers[index].value, new: nil)
            path.removeLast()
        }
    }

    /// For each name in `names`, the index of its last occurrence in `members`, or nil.
    private static func lastOccurrences(of names: [MemberName], in members: [MemberName]) -> [Int?] {
        if members.count <= linearSearchLimit {
            return names.map { name in members.lastIndex(of: name) }
        }
        var last: [MemberName: Int] = [:]
        last.reserveCapacity(members.count)
        for (index, member) in members.enumerated() { last[member] = index }
        return names.map { last[$0] }
    }

    private mutating func compareArrays(_ before: Range<Int>, _ after: Range<Int>) {
        let oldElements = old.elementRanges(ofArrayAt: before.lowerBound)
        let newElements = new.elementRanges(ofArrayAt: after.lowerBound)
        if oldElements.count != newElements.count {
            changes.append(StateDiff.Change(path: currentPath(), kind: .countChanged, oldCount: oldElements.count, newCount: newElements.count))
        }
        let common = min(oldElements.count, newElements.count)
        for index in 0..<common {
            path.append(.index(index))
            compare(oldElements[index], newElements[index])
            path.removeLast()
        }
        for index in common..<max(common, newElements.count) {
            path.append(.index(index))
            record(.added, old: nil, new: newElements[index])
            path.removeLast()
        }
        for index in common..<max(common, oldElements.count) {
            path.append(.index(index))
            record(.removed, old: oldElements[index], new: nil)
            path.removeLast()
        }
    }

    private func sameString(_ before: Range<Int>, _ after: Range<Int>) -> Bool {
        let oldEscaped = old.skipString(at: before.lowerBound).escaped
        let newEscaped = new.skipString(at: after.lowerBound).escaped
        // Without escapes the bytes are the text, and they differ.
        guard oldEscaped || newEscaped else { return false }
        let oldText = old.decodeString((before.lowerBound + 1)..<(before.upperBound - 1), escaped: oldEscaped)
        let newText = new.decodeString((after.lowerBound + 1)..<(after.upperBound - 1), escaped: newEscaped)
        return oldText.utf8.elementsEqual(newText.utf8)
    }

    private func currentPath() -> StatePath {
        StatePath(
            path.map { step in
                switch step {
                case .name(let name): .key(name.text)
                case .index(let index): .index(index)
                }
            }
        )
    }

    private mutating func record(_ kind: StateDiff.Change.Kind, old before: Range<Int>?, new after: Range<Int>?) {
        changes.append(
            StateDiff.Change(
                path: currentPath(),
                kind: kind,
                old: before.map { JSONFragment(text: old.compactText($0)) },
                new: after.map { JSONFragment(text: new.compactText($0)) }
            )
        )
    }
}

/// A member name as bytes, for matching the members of two objects without making strings: the raw bytes
/// between the quotes when the name has no escapes, its decoded UTF-8 otherwise. Equal names are equal bytes
/// (so `"é"` and `"e\u0301"` differ, as in ``JSONValue``). A cheap FNV-1a hash, computed once, speeds up both
/// the linear search and the dictionary.
private struct MemberName: Hashable {
    private let raw: UnsafeBufferPointer<UInt8>
    private let decoded: [UInt8]?
    private let fingerprint: UInt64

    init(_ scanner: JSONScanner, _ member: JSONScanner.MemberRanges) {
        if member.nameEscaped {
            let bytes = Array(scanner.decodeString(member.name, escaped: true).utf8)
            raw = UnsafeBufferPointer(start: nil, count: 0)
            decoded = bytes
            fingerprint = bytes.withUnsafeBufferPointer(Self.fnv1a)
        } else {
            raw = UnsafeBufferPointer(rebasing: scanner.bytes[member.name])
            decoded = nil
            fingerprint = Self.fnv1a(raw)
        }
    }

    private static func fnv1a(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt64 {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01B3 }
        return hash
    }

    private func withBytes<Result>(_ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        if let decoded { return decoded.withUnsafeBufferPointer(body) }
        return body(raw)
    }

    /// The name as text, for a path.
    var text: String { withBytes { String(decoding: $0, as: UTF8.self) } }

    static func == (lhs: Self, rhs: Self) -> Bool {
        guard lhs.fingerprint == rhs.fingerprint else { return false }
        return lhs.withBytes { left in
            rhs.withBytes { right in
                left.count == right.count && (left.count == 0 || memcmp(left.baseAddress!, right.baseAddress!, left.count) == 0)
            }
        }
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(fingerprint)
    }
}
