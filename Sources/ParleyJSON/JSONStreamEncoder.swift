import Foundation
import NIOCore

/// Encodes `Encodable` values as JSON straight into a `ByteBuffer`, as they are visited: no tree of values in between,
/// as Foundation's `JSONEncoder` builds (its dictionaries, their hashing and the dynamic casts of every value were
/// most of a small message's cost to send, 5 µs for four members).
///
/// It writes what a default `JSONEncoder` with `.withoutEscapingSlashes` writes, member for member: the same
/// numbers (a `Double` as its shortest decimal form, `1.0` as `1`), `Data` as Base64, `URL` as its absolute
/// string, `Decimal` as a number, a value that encodes nothing as `{}`; members in the order they are encoded.
///
/// Streaming needs a value to fill its containers in order: a nested container is finished once its parent is
/// written to again. A value that goes back to a finished container, asks for a super-encoder, mixes kinds of
/// container, writes a key twice into one object (JSONEncoder keeps the last), writes what JSON cannot hold (a NaN)
/// or a 128-bit integer, or catches an error and goes on, makes ``encode(_:into:)`` throw
/// ``JSONStreamEncoderUnsupported`` and leave the buffer as it was: the caller then encodes it with `JSONEncoder`,
/// which either manages or names the problem.
public struct JSONStreamEncoder: Sendable {
    public init() {}

    /// Appends `value`'s JSON to `buffer`. On any error `buffer` is left as it was.
    public func encode<T: Encodable>(_ value: T, into buffer: inout ByteBuffer) throws {
        let writer = JSONStreamWriter(buffer: buffer)
        // The caller's copy would make every write copy the storage first.
        buffer = ByteBuffer()
        let start = writer.writerIndex
        do {
            try writer.encodeValue(value, path: nil)
            guard !writer.unsupported, writer.writerIndex > start else { throw JSONStreamEncoderUnsupported() }
        } catch {
            writer.truncate(to: start)
            buffer = writer.take()
            throw error
        }
        buffer = writer.take()
    }
}

/// The value was not encoded (see ``JSONStreamEncoder``): its containers were not used in order, or it holds
/// something JSON cannot.
public struct JSONStreamEncoderUnsupported: Error, Sendable {}

/// A coding path as a list that shares its beginning: a level deeper costs one small allocation, not a copy.
private final class StreamPath {
    let key: any CodingKey
    let parent: StreamPath?

    init(_ key: any CodingKey, parent: StreamPath?) {
        self.key = key
        self.parent = parent
    }

    static func keys(_ node: StreamPath?) -> [any CodingKey] {
        var keys: [any CodingKey] = []
        var node = node
        while let current = node {
            keys.append(current.key)
            node = current.parent
        }
        return keys.reversed()
    }
}

private struct StreamIndexKey: CodingKey {
    var intValue: Int?
    var stringValue: String { "Index \(intValue ?? 0)" }
    init(intValue: Int) { self.intValue = intValue }
    init?(stringValue: String) { nil }
}

/// The output and the containers still open in it, innermost last. A container is named by a number that only
/// grows, so one further down the stack always has a smaller number than those above it.
private final class JSONStreamWriter {
    private struct Open {
        let id: Int
        let closer: UInt8
        var members: Int
        /// Where this container's keys start in `State.keys` (an object's; an array has none).
        let keysStart: Int
        /// The keys again, once there are too many to look through one by one.
        var keySet: Set<String>?
    }

    private struct State {
        var buffer: ByteBuffer
        var unsupported = false
        var open: [Open] = []
        /// The keys written so far into each open object, outermost first: JSONEncoder keeps one member per key
        /// (the last), which a stream cannot do, so a key written twice refuses the value.
        var keys: [String] = []
        var lastID = 0
    }

    /// Keys an object looks through one by one for a repeat before it keeps them in a set.
    private static let keysScanned = 16

    /// Behind a pointer rather than in stored properties: the class's `var`s were checked for exclusive access at
    /// run time on every byte written, 40 % of the encoding. One writer serves one `encode` call on one thread,
    /// and no access to the state outlives the method that makes it.
    private let state: UnsafeMutablePointer<State>

    init(buffer: ByteBuffer) {
        state = .allocate(capacity: 1)
        state.initialize(to: State(buffer: buffer))
        state.pointee.open.reserveCapacity(8)
    }

    deinit {
        state.deinitialize(count: 1)
        state.deallocate()
    }

    var writerIndex: Int { state.pointee.buffer.writerIndex }

    /// Set by whatever refuses the value: the value is then refused as a whole, even if its own code catches the
    /// error and goes on (what was written up to the error is in the buffer).
    var unsupported: Bool {
        get { state.pointee.unsupported }
        set { state.pointee.unsupported = newValue }
    }

    /// Marks the value refused; the error to throw.
    func refuse() -> JSONStreamEncoderUnsupported {
        state.pointee.unsupported = true
        return JSONStreamEncoderUnsupported()
    }

    /// Drops what was written from `index` on.
    func truncate(to index: Int) {
        state.pointee.buffer.moveWriterIndex(to: index)
    }

    func take() -> ByteBuffer {
        defer { state.pointee.buffer = ByteBuffer() }
        return state.pointee.buffer
    }

    /// Opens an object (`keyed`) or an array at the current position; its number.
    func openContainer(keyed: Bool) -> Int {
        openContainer(keyed ? UInt8(ascii: "{") : UInt8(ascii: "["), closer: keyed ? UInt8(ascii: "}") : UInt8(ascii: "]"))
    }

    /// Opens an object or an array as the next member of a container, once `begin` has written its separator (and
    /// key); its number. 0, a number no container has, when `begin` refused the value.
    func openNested(keyed: Bool, after begin: () throws -> Void) -> Int {
        (try? begin()) == nil ? 0 : openContainer(keyed: keyed)
    }

    /// An encoder for a super-encoder's value, which is written when it is done, which a stream cannot know: the
    /// value is refused.
    func refusedEncoder(path: StreamPath?) -> any Encoder {
        state.pointee.unsupported = true
        return JSONStreamValueEncoder(writer: self, path: path)
    }

    private func openContainer(_ opener: UInt8, closer: UInt8) -> Int {
        state.pointee.lastID += 1
        state.pointee.buffer.writeInteger(opener)
        state.pointee.open.append(Open(id: state.pointee.lastID, closer: closer, members: 0, keysStart: state.pointee.keys.count))
        return state.pointee.lastID
    }

    /// Members written so far into container `id`; 0 once it is closed.
    func members(of id: Int) -> Int {
        state.pointee.open.last(where: { $0.id == id })?.members ?? 0
    }

    private func close() {
        let closed = state.pointee.open.removeLast()
        state.pointee.buffer.writeInteger(closed.closer)
        state.pointee.keys.removeSubrange(closed.keysStart...)
    }

    /// Makes `id` the innermost open container, closing those opened inside it since, and writes the separator
    /// its next member needs. Throws when `id` was closed already: the value went back to it.
    func beginMember(of id: Int) throws {
        while let last = state.pointee.open.last, last.id > id { close() }
        guard let last = state.pointee.open.indices.last, state.pointee.open[last].id == id else { throw refuse() }
        if state.pointee.open[last].members > 0 { state.pointee.buffer.writeInteger(UInt8(ascii: ",")) }
        state.pointee.open[last].members += 1
    }

    func beginMember(of id: Int, key: some CodingKey) throws {
        try beginMember(of: id)
        let name = key.stringValue
        try noteKey(name)
        writeString(name)
        state.pointee.buffer.writeInteger(UInt8(ascii: ":"))
    }

    /// Refuses a key the innermost object has already written (compared as Swift compares strings, as the
    /// dictionary JSONEncoder keeps its members in does).
    private func noteKey(_ name: String) throws {
        let object = state.pointee.open.count - 1
        if state.pointee.open[object].keySet == nil {
            let start = state.pointee.open[object].keysStart
            if state.pointee.keys.count - start < Self.keysScanned {
                for index in start..<state.pointee.keys.count where state.pointee.keys[index] == name { throw refuse() }
                state.pointee.keys.append(name)
                return
            }
            state.pointee.open[object].keySet = Set(state.pointee.keys[start...])
        }
        guard state.pointee.open[object].keySet!.insert(name).inserted else { throw refuse() }
    }

    func writeString(_ text: String) {
        var text = text
        // Most strings need no escaping: then they go in as one copy.
        let plain = text.withUTF8 { bytes in
            for byte in bytes where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { return false }
            state.pointee.buffer.reserveCapacity(minimumWritableBytes: bytes.count + 2)
            state.pointee.buffer.writeInteger(UInt8(ascii: "\""))
            state.pointee.buffer.writeBytes(bytes)
            state.pointee.buffer.writeInteger(UInt8(ascii: "\""))
            return true
        }
        if !plain {
            var escaped: [UInt8] = []
            JSONValue.writeQuoted(text, to: &escaped)
            state.pointee.buffer.writeBytes(escaped)
        }
    }

    func writeLiteral(_ text: StaticString) {
        state.pointee.buffer.writeStaticString(text)
    }

    func writeInteger(_ value: some FixedWidthInteger) {
        var digits = value.description
        digits.withUTF8 { _ = state.pointee.buffer.writeBytes($0) }
    }

    /// As `JSONEncoder` writes a floating-point number: its shortest round-tripping form, without a trailing `.0`.
    func writeFloat(_ value: some BinaryFloatingPoint & LosslessStringConvertible) throws {
        guard value.isFinite else { throw refuse() }
        var text = value.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        text.withUTF8 { _ = state.pointee.buffer.writeBytes($0) }
    }

    /// Writes any value at the current position (its member's separator and key already written).
    func encodeValue<T: Encodable>(_ value: T, path: StreamPath?) throws {
        // The common types first, by their metadata alone: a dynamic cast for each value cost more than writing it.
        if T.self == String.self { return writeString(value as! String) }
        if T.self == Int.self { return writeInteger(value as! Int) }
        if T.self == Bool.self { return writeLiteral((value as! Bool) ? "true" : "false") }
        if T.self == Double.self { return try writeFloat(value as! Double) }
        // What JSONEncoder writes otherwise than the type's own encode(to:) does.
        if T.self == Data.self { return writeString((value as! Data).base64EncodedString()) }
        if T.self == URL.self { return writeString((value as! URL).absoluteString) }
        if T.self == Decimal.self {
            let decimal = value as! Decimal
            guard !decimal.isNaN else { throw refuse() }
            var text = decimal.description
            text.withUTF8 { _ = state.pointee.buffer.writeBytes($0) }
            return
        }
        let depth = state.pointee.open.count
        let mark = state.pointee.buffer.writerIndex
        do {
            try value.encode(to: JSONStreamValueEncoder(writer: self, path: path))
        } catch {
            // Its parent may catch this and go on: the output then holds what the value wrote before failing.
            state.pointee.unsupported = true
            throw error
        }
        while state.pointee.open.count > depth { close() }
        // A value that wrote nothing: JSONEncoder writes an empty object for it.
        if state.pointee.buffer.writerIndex == mark && depth > 0 { writeLiteral("{}") }
    }
}

/// The `Encoder` a value's `encode(to:)` gets: one kind of container, asked for as often as the value likes (a
/// subclass and its superclass share the object).
private final class JSONStreamValueEncoder: Encoder {
    private enum Chosen {
        case none
        case keyed(Int)
        case unkeyed(Int)
        /// Where its one value starts.
        case single(Int)
    }

    let writer: JSONStreamWriter
    let path: StreamPath?
    private var chosen = Chosen.none

    init(writer: JSONStreamWriter, path: StreamPath?) {
        self.writer = writer
        self.path = path
    }

    var codingPath: [any CodingKey] { StreamPath.keys(path) }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    /// The container this encoder hands out: the first one asked for. Another kind afterwards refuses the value
    /// (and gets a container that writes nowhere: number 0, or a single value's start of -1).
    private func choose(_ make: () -> Chosen) -> Chosen {
        if case .none = chosen { chosen = make() }
        return chosen
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        guard case .keyed(let id) = choose({ .keyed(writer.openContainer(keyed: true)) }) else {
            writer.unsupported = true
            return KeyedEncodingContainer(JSONStreamKeyed<Key>(writer: writer, id: 0, path: path))
        }
        return KeyedEncodingContainer(JSONStreamKeyed<Key>(writer: writer, id: id, path: path))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        guard case .unkeyed(let id) = choose({ .unkeyed(writer.openContainer(keyed: false)) }) else {
            writer.unsupported = true
            return JSONStreamUnkeyed(writer: writer, id: 0, path: path)
        }
        return JSONStreamUnkeyed(writer: writer, id: id, path: path)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        guard case .single(let start) = choose({ .single(writer.writerIndex) }) else {
            writer.unsupported = true
            return JSONStreamSingle(writer: writer, path: path, start: -1)
        }
        return JSONStreamSingle(writer: writer, path: path, start: start)
    }
}

private struct JSONStreamKeyed<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let writer: JSONStreamWriter
    let id: Int
    let path: StreamPath?

    var codingPath: [any CodingKey] { StreamPath.keys(path) }

    mutating func encodeNil(forKey key: Key) throws {
        try writer.beginMember(of: id, key: key)
        writer.writeLiteral("null")
    }
    mutating func encode(_ value: Bool, forKey key: Key) throws {
        try writer.beginMember(of: id, key: key)
        writer.writeLiteral(value ? "true" : "false")
    }
    mutating func encode(_ value: String, forKey key: Key) throws {
        try writer.beginMember(of: id, key: key)
        writer.writeString(value)
    }
    mutating func encode(_ value: Double, forKey key: Key) throws {
        try writer.beginMember(of: id, key: key)
        try writer.writeFloat(value)
    }
    mutating func encode(_ value: Float, forKey key: Key) throws {
        try writer.beginMember(of: id, key: key)
        try writer.writeFloat(value)
    }
    mutating func encode(_ value: Int, forKey key: Key) throws { try integer(value, key) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { try integer(value, key) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { try integer(value, key) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { try integer(value, key) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { try integer(value, key) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { try integer(value, key) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { try integer(value, key) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { try integer(value, key) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { try integer(value, key) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { try integer(value, key) }

    /// JSONEncoder's own handling of 128-bit integers decides: the value is refused here.
    @available(macOS 15.0, iOS 18.0, *)
    mutating func encode(_ value: Int128, forKey key: Key) throws { throw writer.refuse() }
    @available(macOS 15.0, iOS 18.0, *)
    mutating func encode(_ value: UInt128, forKey key: Key) throws { throw writer.refuse() }

    private func integer(_ value: some FixedWidthInteger, _ key: Key) throws {
        try writer.beginMember(of: id, key: key)
        writer.writeInteger(value)
    }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        try writer.beginMember(of: id, key: key)
        try writer.encodeValue(value, path: StreamPath(key, parent: path))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        let nested = writer.openNested(keyed: true) { try writer.beginMember(of: id, key: key) }
        return KeyedEncodingContainer(JSONStreamKeyed<NestedKey>(writer: writer, id: nested, path: StreamPath(key, parent: path)))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let nested = writer.openNested(keyed: false) { try writer.beginMember(of: id, key: key) }
        return JSONStreamUnkeyed(writer: writer, id: nested, path: StreamPath(key, parent: path))
    }

    mutating func superEncoder() -> any Encoder { writer.refusedEncoder(path: path) }
    mutating func superEncoder(forKey key: Key) -> any Encoder { writer.refusedEncoder(path: path) }
}

private struct JSONStreamUnkeyed: UnkeyedEncodingContainer, JSONStreamValues {
    let writer: JSONStreamWriter
    let id: Int
    let path: StreamPath?

    init(writer: JSONStreamWriter, id: Int, path: StreamPath?) {
        self.writer = writer
        self.id = id
        self.path = path
    }

    var codingPath: [any CodingKey] { StreamPath.keys(path) }

    /// Kept by the writer, not by this copy: an encoder asked twice for its unkeyed container hands out one array.
    var count: Int { writer.members(of: id) }

    mutating func beginValue() throws {
        try writer.beginMember(of: id)
    }

    /// JSONEncoder's own handling of 128-bit integers decides: the value is refused here.
    @available(macOS 15.0, iOS 18.0, *)
    mutating func encode(_ value: Int128) throws { throw writer.refuse() }
    @available(macOS 15.0, iOS 18.0, *)
    mutating func encode(_ value: UInt128) throws { throw writer.refuse() }

    mutating func encode<T: Encodable>(_ value: T) throws {
        let index = count
        try beginValue()
        try writer.encodeValue(value, path: StreamPath(StreamIndexKey(intValue: index), parent: path))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let index = count
        let nested = writer.openNested(keyed: true) { try beginValue() }
        return KeyedEncodingContainer(
            JSONStreamKeyed<NestedKey>(writer: writer, id: nested, path: StreamPath(StreamIndexKey(intValue: index), parent: path)))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let index = count
        let nested = writer.openNested(keyed: false) { try beginValue() }
        return JSONStreamUnkeyed(writer: writer, id: nested, path: StreamPath(StreamIndexKey(intValue: index), parent: path))
    }

    mutating func superEncoder() -> any Encoder { writer.refusedEncoder(path: path) }
}

/// One value where the encoder stands; a second one is refused (JSONEncoder stops the program for it).
private struct JSONStreamSingle: SingleValueEncodingContainer, JSONStreamValues {
    let writer: JSONStreamWriter
    let path: StreamPath?
    private let start: Int

    init(writer: JSONStreamWriter, path: StreamPath?, start: Int) {
        self.writer = writer
        self.path = path
        self.start = start
    }

    var codingPath: [any CodingKey] { StreamPath.keys(path) }

    func beginValue() throws {
        guard writer.writerIndex == start else { throw writer.refuse() }
    }

    /// JSONEncoder's own handling of 128-bit integers decides: the value is refused here.
    @available(macOS 15.0, iOS 18.0, *)
    mutating func encode(_ value: Int128) throws { throw writer.refuse() }
    @available(macOS 15.0, iOS 18.0, *)
    mutating func encode(_ value: UInt128) throws { throw writer.refuse() }

    mutating func encode<T: Encodable>(_ value: T) throws {
        try beginValue()
        try writer.encodeValue(value, path: path)
    }
}

/// The values an unkeyed and a single-value container write the same way, once the container has made room for one
/// (`beginValue`: the separator, or the check that the single value is still to come).
private protocol JSONStreamValues {
    var writer: JSONStreamWriter { get }
    mutating func beginValue() throws
}

extension JSONStreamValues {
    mutating func encodeNil() throws {
        try beginValue()
        writer.writeLiteral("null")
    }
    mutating func encode(_ value: Bool) throws {
        try beginValue()
        writer.writeLiteral(value ? "true" : "false")
    }
    mutating func encode(_ value: String) throws {
        try beginValue()
        writer.writeString(value)
    }
    mutating func encode(_ value: Double) throws {
        try beginValue()
        try writer.writeFloat(value)
    }
    mutating func encode(_ value: Float) throws {
        try beginValue()
        try writer.writeFloat(value)
    }
    mutating func encode(_ value: Int) throws { try integer(value) }
    mutating func encode(_ value: Int8) throws { try integer(value) }
    mutating func encode(_ value: Int16) throws { try integer(value) }
    mutating func encode(_ value: Int32) throws { try integer(value) }
    mutating func encode(_ value: Int64) throws { try integer(value) }
    mutating func encode(_ value: UInt) throws { try integer(value) }
    mutating func encode(_ value: UInt8) throws { try integer(value) }
    mutating func encode(_ value: UInt16) throws { try integer(value) }
    mutating func encode(_ value: UInt32) throws { try integer(value) }
    mutating func encode(_ value: UInt64) throws { try integer(value) }

    private mutating func integer(_ value: some FixedWidthInteger) throws {
        try beginValue()
        writer.writeInteger(value)
    }
}
