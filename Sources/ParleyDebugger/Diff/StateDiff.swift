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
    }

    /// In the order a reader meets them: depth first, members in the new state's order, then removed members.
    public var changes: [Change]

    public var isEmpty: Bool { changes.isEmpty }

    public init(changes: [Change]) {
        self.changes = changes
    }

    /// The difference from `old` to `new`, both JSON documents (validated here; see ``StateDiffError``).
    public init(old: ByteBuffer, new: ByteBuffer, depthLimit: Int = JSONLimits.defaultDepth) throws(StateDiffError) {
        do {
            try JSONSkimmer.validate(old, depthLimit: depthLimit)
        } catch {
            throw StateDiffError(side: .old, error: error)
        }
        do {
            try JSONSkimmer.validate(new, depthLimit: depthLimit)
        } catch {
            throw StateDiffError(side: .new, error: error)
        }
        changes = old.withUnsafeReadableBytes { oldRaw in
            new.withUnsafeReadableBytes { newRaw in
                var differ = StateDiffer(
                    old: JSONScanner(oldRaw.assumingMemoryBound(to: UInt8.self)),
                    new: JSONScanner(newRaw.assumingMemoryBound(to: UInt8.self))
                )
                let oldStart = differ.old.skipWhitespace(from: 0)
                let newStart = differ.new.skipWhitespace(from: 0)
                differ.compare(oldStart..<differ.old.skipValue(at: oldStart), newStart..<differ.new.skipValue(at: newStart))
                return differ.changes
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
    public var kind: JSONKind {
        switch text.utf8.first {
        case UInt8(ascii: "{"): .object
        case UInt8(ascii: "["): .array
        case UInt8(ascii: "\""): .string
        case UInt8(ascii: "t"), UInt8(ascii: "f"): .bool
        case UInt8(ascii: "n"): .null
        default: .number
        }
    }

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

/// Walks two validated documents side by side.
struct StateDiffer {
    let old: JSONScanner
    let new: JSONScanner
    var changes: [StateDiff.Change] = []
    var path: [StatePath.Component] = []

    init(old: JSONScanner, new: JSONScanner) {
        self.old = old
        self.new = new
    }

    mutating func compare(_ before: Range<Int>, _ after: Range<Int>) {
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

    private mutating func compareObjects(_ before: Range<Int>, _ after: Range<Int>) {
        let oldMembers = old.memberRanges(ofObjectAt: before.lowerBound)
        let newMembers = new.memberRanges(ofObjectAt: after.lowerBound)
        var oldIndex: [MemberName: Int] = [:]
        oldIndex.reserveCapacity(oldMembers.count)
        for (index, member) in oldMembers.enumerated() { oldIndex[MemberName(old, member)] = index }
        var newIndex: [MemberName: Int] = [:]
        newIndex.reserveCapacity(newMembers.count)
        for (index, member) in newMembers.enumerated() { newIndex[MemberName(new, member)] = index }

        for (index, member) in newMembers.enumerated() {
            let name = MemberName(new, member)
            guard newIndex[name] == index else { continue }  // an earlier duplicate: the last one counts
            path.append(.key(new.decodeString(member.name, escaped: member.nameEscaped)))
            if let match = oldIndex[name] {
                compare(oldMembers[match].value, member.value)
            } else {
                record(.added, old: nil, new: member.value)
            }
            path.removeLast()
        }
        for (index, member) in oldMembers.enumerated() {
            let name = MemberName(old, member)
            guard oldIndex[name] == index, newIndex[name] == nil else { continue }
            path.append(.key(old.decodeString(member.name, escaped: member.nameEscaped)))
            record(.removed, old: member.value, new: nil)
            path.removeLast()
        }
    }

    private mutating func compareArrays(_ before: Range<Int>, _ after: Range<Int>) {
        let oldElements = old.elementRanges(ofArrayAt: before.lowerBound)
        let newElements = new.elementRanges(ofArrayAt: after.lowerBound)
        if oldElements.count != newElements.count {
            changes.append(StateDiff.Change(path: StatePath(path), kind: .countChanged, oldCount: oldElements.count, newCount: newElements.count))
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

    private mutating func record(_ kind: StateDiff.Change.Kind, old before: Range<Int>?, new after: Range<Int>?) {
        changes.append(
            StateDiff.Change(
                path: StatePath(path),
                kind: kind,
                old: before.map { JSONFragment(text: old.compactText($0)) },
                new: after.map { JSONFragment(text: new.compactText($0)) }
            )
        )
    }
}

/// A member name as bytes, for matching members of two objects without making strings: the raw bytes between
/// the quotes when the name has no escapes, its decoded UTF-8 otherwise.
private struct MemberName: Hashable {
    private let raw: UnsafeBufferPointer<UInt8>
    private let decoded: [UInt8]?

    init(_ scanner: JSONScanner, _ member: JSONScanner.MemberRanges) {
        if member.nameEscaped {
            raw = UnsafeBufferPointer(start: nil, count: 0)
            decoded = Array(scanner.decodeString(member.name, escaped: true).utf8)
        } else {
            raw = UnsafeBufferPointer(rebasing: scanner.bytes[member.name])
            decoded = nil
        }
    }

    private func withBytes<Result>(_ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        if let decoded { return decoded.withUnsafeBufferPointer(body) }
        return body(raw)
    }

    static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.withBytes { left in rhs.withBytes { right in left.elementsEqual(right) } }
    }

    func hash(into hasher: inout Hasher) {
        withBytes { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }
}
