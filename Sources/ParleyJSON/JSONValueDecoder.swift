import NIOCore

/// Decodes `Decodable` types from a parsed ``JSONValue``: the types' own `init(from:)`, over a tree this module
/// parsed and validated.
///
/// parleyd reads apps' log and span batches with it. Foundation's `JSONDecoder` builds a `DecodingError` (its coding
/// path and text) for every type a value is tried as and is not, which is how a value whose kind only the JSON
/// says (an attribute: string, number, boolean, …) is read through `Decodable`; a batch of 512 log records with two
/// metadata entries each spent three quarters of its decoding there. Here a type reads the tree directly instead
/// (``JSONTreeDecoder``), and errors say what the `JSONDecoder`'s would: where (the coding path) and what.
public struct JSONValueDecoder: Sendable {
    public var depthLimit: Int

    public init(depthLimit: Int = JSONLimits.defaultDepth) {
        self.depthLimit = depthLimit
    }

    /// Parses `document` (refusing what is not JSON with ``JSONError``) and decodes a `T` from it.
    public func decode<T: Decodable>(_ type: T.Type, from document: ByteBuffer) throws -> T {
        try decode(type, from: try JSONValue(parsing: document, depthLimit: depthLimit))
    }

    public func decode<T: Decodable>(_ type: T.Type, from value: JSONValue) throws -> T {
        try T(from: TreeDecoder(value: value, parent: nil, key: nil))
    }
}

/// The decoder ``JSONValueDecoder`` hands to `init(from:)`: a type whose shape depends on the JSON (an
/// attribute value, a number written as a number or a string) reads `value` instead of trying one type after
/// another.
public protocol JSONTreeDecoder: Decoder {
    var value: JSONValue { get }
}

/// Where a value is, from the root: a list that grows from its end and shares its beginning, so that going a
/// level deeper costs one small allocation, not a copy of the path.
private final class CodingPathNode: Sendable {
    let key: PathKey
    let parent: CodingPathNode?

    init(_ key: PathKey, parent: CodingPathNode?) {
        self.key = key
        self.parent = parent
    }

    var keys: [any CodingKey] {
        var keys: [any CodingKey] = []
        var node: CodingPathNode? = self
        while let current = node {
            keys.append(current.key)
            node = current.parent
        }
        return keys.reversed()
    }
}

/// A member name or an array index in a coding path.
private struct PathKey: CodingKey, Sendable {
    let stringValue: String
    let intValue: Int?

    init(stringValue: String) {
        self.stringValue = stringValue
        intValue = nil
    }

    init(intValue: Int) {
        stringValue = "Index \(intValue)"
        self.intValue = intValue
    }

    init(_ key: some CodingKey) {
        stringValue = key.stringValue
        intValue = key.intValue
    }
}

private struct TreeDecoder: JSONTreeDecoder, SingleValueDecodingContainer {
    let value: JSONValue
    /// The path of the container this value is in, and its key there (nil for the root): kept apart so that
    /// decoding a member allocates nothing; a container allocates its path's node once (``node``).
    let parent: CodingPathNode?
    let key: PathKey?

    var codingPath: [any CodingKey] {
        guard let key else { return [] }
        return (parent?.keys ?? []) + [key]
    }

    var userInfo: [CodingUserInfoKey: Any] { [:] }

    /// This value's place as a path node, the parent of its members' or elements'.
    var node: CodingPathNode? { key.map { CodingPathNode($0, parent: parent) } }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let members) = value else { throw mismatch([String: Any].self, expected: "an object") }
        return KeyedDecodingContainer(KeyedTree<Key>(members: members, decoder: self, node: node))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let elements) = value else { throw mismatch([Any].self, expected: "an array") }
        return UnkeyedTree(elements: elements, decoder: self, node: node)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

    // MARK: Errors

    func mismatch(_ type: Any.Type, expected: String) -> DecodingError {
        let found: String =
            switch value {
            case .null: "null"
            case .bool: "a boolean"
            case .number(let number): "the number \(number.text)"
            case .string: "a string"
            case .array: "an array"
            case .object: "an object"
            }
        if case .null = value {
            return .valueNotFound(type, DecodingError.Context(codingPath: codingPath, debugDescription: "\(expected) was expected, not null"))
        }
        return .typeMismatch(type, DecodingError.Context(codingPath: codingPath, debugDescription: "\(expected) was expected, not \(found)"))
    }

    // MARK: Single values

    func decodeNil() -> Bool {
        if case .null = value { return true }
        return false
    }

    func decode(_ type: Bool.Type) throws -> Bool {
        guard case .bool(let flag) = value else { throw mismatch(type, expected: "a boolean") }
        return flag
    }

    func decode(_ type: String.Type) throws -> String {
        guard case .string(let text) = value else { throw mismatch(type, expected: "a string") }
        return text
    }

    func decode(_ type: Double.Type) throws -> Double {
        guard case .number(let number) = value, let double = number.double else { throw mismatch(type, expected: "a number") }
        return double
    }

    func decode(_ type: Float.Type) throws -> Float {
        guard case .number(let number) = value, let float = Float(number.text), float.isFinite else { throw mismatch(type, expected: "a number") }
        return float
    }

    func decode(_ type: Int.Type) throws -> Int { try integer() }
    func decode(_ type: Int8.Type) throws -> Int8 { try integer() }
    func decode(_ type: Int16.Type) throws -> Int16 { try integer() }
    func decode(_ type: Int32.Type) throws -> Int32 { try integer() }
    func decode(_ type: Int64.Type) throws -> Int64 { try integer() }
    func decode(_ type: UInt.Type) throws -> UInt { try integer() }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try integer() }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try integer() }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try integer() }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try integer() }

    /// An integer written without fraction or exponent, or with ones that leave it whole (`1.0`, `1e3`), in range.
    private func integer<Integer: FixedWidthInteger>() throws -> Integer {
        guard case .number(let number) = value else { throw mismatch(Integer.self, expected: "an integer") }
        if let exact = Integer(number.text) { return exact }
        if let double = number.double, let whole = Integer(exactly: double) { return whole }
        throw DecodingError.dataCorrupted(
            DecodingError.Context(codingPath: codingPath, debugDescription: "the number \(number.text) is not an integer that fits \(Integer.self)"))
    }

    func decode<T: Decodable>(_ type: T.Type) throws -> T { try T(from: self) }
}

private struct KeyedTree<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let members: [JSONMember]
    let decoder: TreeDecoder
    let node: CodingPathNode?
    /// Where each name is (its last occurrence), for objects too large to search member by member: a dictionary
    /// of a million entries is decoded key by key, which a linear search would make quadratic.
    let index: [String: Int]?

    init(members: [JSONMember], decoder: TreeDecoder, node: CodingPathNode?) {
        self.members = members
        self.decoder = decoder
        self.node = node
        if members.count > 16 {
            var index: [String: Int] = [:]
            index.reserveCapacity(members.count)
            for (position, member) in members.enumerated() { index[member.key] = position }
            self.index = index
        } else {
            index = nil
        }
    }

    var codingPath: [any CodingKey] { decoder.codingPath }
    var allKeys: [Key] {
        guard let index else { return members.compactMap { Key(stringValue: $0.key) } }
        // Each name once, in document order.
        return members.indices.compactMap { index[members[$0].key] == $0 ? Key(stringValue: members[$0].key) : nil }
    }

    /// The member's value; the last one when a name repeats, as JSON parsers commonly do.
    private func find(_ key: Key) -> JSONValue? {
        let name = key.stringValue
        if let index { return index[name].map { members[$0].value } }
        var found: JSONValue?
        for member in members where member.key == name { found = member.value }
        return found
    }

    private func child(_ key: Key) throws -> TreeDecoder {
        guard let value = find(key) else {
            throw DecodingError.keyNotFound(key, DecodingError.Context(codingPath: codingPath, debugDescription: "\"\(key.stringValue)\" is missing"))
        }
        return TreeDecoder(value: value, parent: node, key: PathKey(key))
    }

    func contains(_ key: Key) -> Bool { find(key) != nil }

    func decodeNil(forKey key: Key) throws -> Bool { try child(key).decodeNil() }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try child(key).decode(type) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try child(key).decode(type) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try child(key).decode(type) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try child(key).decode(type) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try child(key).decode(type) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try child(key).decode(type) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try child(key).decode(type) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try child(key).decode(type) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try child(key).decode(type) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try child(key).decode(type) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try child(key).decode(type) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try child(key).decode(type) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try child(key).decode(type) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try child(key).decode(type) }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try T(from: child(key)) }

    /// The member's decoder, nil when it is absent or null (both nil, as with `JSONDecoder`).
    private func present(_ key: Key) -> TreeDecoder? {
        guard let value = find(key) else { return nil }
        if case .null = value { return nil }
        return TreeDecoder(value: value, parent: node, key: PathKey(key))
    }

    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? { try present(key).map { try T(from: $0) } }
    // The standard library's own versions of these look the member up three times.
    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? { try present(key)?.decode(type) }
    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? { try present(key)?.decode(type) }
    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? { try present(key)?.decode(type) }
    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { try present(key)?.decode(type) }
    func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { try present(key)?.decode(type) }
    func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? { try present(key)?.decode(type) }
    func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? { try present(key)?.decode(type) }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try child(key).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer { try child(key).unkeyedContainer() }

    func superDecoder() throws -> any Decoder { TreeDecoder(value: .object(members), parent: node, key: PathKey(stringValue: "super")) }
    func superDecoder(forKey key: Key) throws -> any Decoder { try child(key) }
}

private struct UnkeyedTree: UnkeyedDecodingContainer {
    let elements: [JSONValue]
    let decoder: TreeDecoder
    let node: CodingPathNode?
    private(set) var currentIndex = 0

    init(elements: [JSONValue], decoder: TreeDecoder, node: CodingPathNode?) {
        self.elements = elements
        self.decoder = decoder
        self.node = node
    }

    var codingPath: [any CodingKey] { decoder.codingPath }
    var count: Int? { elements.count }
    var isAtEnd: Bool { currentIndex >= elements.count }

    /// The next element's decoder, moving past it.
    private mutating func next(_ type: Any.Type) throws -> TreeDecoder {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(
                type, DecodingError.Context(codingPath: codingPath + [PathKey(intValue: currentIndex)], debugDescription: "the array has no more elements"))
        }
        defer { currentIndex += 1 }
        return TreeDecoder(value: elements[currentIndex], parent: node, key: PathKey(intValue: currentIndex))
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, case .null = elements[currentIndex] else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool { try next(type).decode(type) }
    mutating func decode(_ type: String.Type) throws -> String { try next(type).decode(type) }
    mutating func decode(_ type: Double.Type) throws -> Double { try next(type).decode(type) }
    mutating func decode(_ type: Float.Type) throws -> Float { try next(type).decode(type) }
    mutating func decode(_ type: Int.Type) throws -> Int { try next(type).decode(type) }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try next(type).decode(type) }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try next(type).decode(type) }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try next(type).decode(type) }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try next(type).decode(type) }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try next(type).decode(type) }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try next(type).decode(type) }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try next(type).decode(type) }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try next(type).decode(type) }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try next(type).decode(type) }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try T(from: next(type)) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        try next([String: Any].self).container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer { try next([Any].self).unkeyedContainer() }

    mutating func superDecoder() throws -> any Decoder { try next(Any.self) }
}
