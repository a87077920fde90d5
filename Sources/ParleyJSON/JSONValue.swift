import NIOCore

/// A JSON value read by a strict RFC 8259 reader.
///
/// Numbers keep their literal text (``JSONNumber``), objects keep their members in document order (duplicates
/// included; lookups take the last, as most readers do).
///
/// Equality is equality of meaning: objects compare as sets of members (order ignored, last duplicate wins),
/// numbers by decimal value, strings by their Unicode scalars (so `"é"` precomposed and `"e\u0301"` differ,
/// as they do in the document; Swift's `String ==` would call them equal).
public enum JSONValue: Sendable, Equatable, CustomStringConvertible {
    case null
    case bool(Bool)
    case number(JSONNumber)
    case string(String)
    case array([JSONValue])
    case object([JSONMember])

    /// Reads one JSON document: a value with optional whitespace around it, nothing else.
    public init(parsing document: ByteBuffer, depthLimit: Int = JSONLimits.defaultDepth) throws(JSONError) {
        self = try document.withJSONBytes { bytes throws(JSONError) in
            var scanner = JSONScanner(bytes, depthLimit: depthLimit)
            scanner.skipWhitespace()
            let value = try scanner.parseValue(depth: 0)
            try scanner.expectEnd()
            return value
        }
    }

    /// Reads one JSON document from UTF-8 bytes (`Array`, `Data`, `String.UTF8View`, …).
    public init(parsing document: some Sequence<UInt8>, depthLimit: Int = JSONLimits.defaultDepth) throws(JSONError) {
        try self.init(parsing: ByteBuffer(bytes: document), depthLimit: depthLimit)
    }

    public var kind: JSONKind {
        switch self {
        case .null: .null
        case .bool: .bool
        case .number: .number
        case .string: .string
        case .array: .array
        case .object: .object
        }
    }

    /// The value of the last member named `key` (compared scalar by scalar), if this is an object that has one.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.last(where: { $0.key.unicodeScalars.elementsEqual(key.unicodeScalars) })?.value
    }

    /// The element at `index`, if this is an array that long.
    public subscript(index: Int) -> JSONValue? {
        guard case .array(let elements) = self, elements.indices.contains(index) else { return nil }
        return elements[index]
    }

    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case (.bool(let left), .bool(let right)): return left == right
        case (.number(let left), .number(let right)): return left == right
        case (.string(let left), .string(let right)): return left.unicodeScalars.elementsEqual(right.unicodeScalars)
        case (.array(let left), .array(let right)): return left.elementsEqual(right)
        case (.object(let left), .object(let right)):
            let leftMembers = Dictionary(left.map { (ExactKey($0.key), $0.value) }, uniquingKeysWith: { _, last in last })
            let rightMembers = Dictionary(right.map { (ExactKey($0.key), $0.value) }, uniquingKeysWith: { _, last in last })
            return leftMembers == rightMembers
        default: return false
        }
    }

    /// JSON text for this value: numbers exactly as read, strings escaped only where JSON requires it.
    /// `pretty` puts each member and element on its own line, indented by two spaces.
    public func jsonText(pretty: Bool = false) -> String {
        var output = ""
        write(to: &output, pretty: pretty, indent: 0)
        return output
    }

    /// The compact JSON text.
    public var description: String { jsonText() }

    private func write(to output: inout String, pretty: Bool, indent: Int) {
        switch self {
        case .null: output += "null"
        case .bool(let value): output += value ? "true" : "false"
        case .number(let number): output += number.text
        case .string(let text): JSONValue.writeQuoted(text, to: &output)
        case .array(let elements):
            guard !elements.isEmpty else {
                output += "[]"
                return
            }
            output += "["
            for (index, element) in elements.enumerated() {
                if index > 0 { output += "," }
                if pretty { JSONValue.newline(&output, indent + 1) }
                element.write(to: &output, pretty: pretty, indent: indent + 1)
            }
            if pretty { JSONValue.newline(&output, indent) }
            output += "]"
        case .object(let members):
            guard !members.isEmpty else {
                output += "{}"
                return
            }
            output += "{"
            for (index, member) in members.enumerated() {
                if index > 0 { output += "," }
                if pretty { JSONValue.newline(&output, indent + 1) }
                JSONValue.writeQuoted(member.key, to: &output)
                output += pretty ? ": " : ":"
                member.value.write(to: &output, pretty: pretty, indent: indent + 1)
            }
            if pretty { JSONValue.newline(&output, indent) }
            output += "}"
        }
    }

    private static func newline(_ output: inout String, _ indent: Int) {
        output += "\n"
        output += String(repeating: "  ", count: indent)
    }

    /// Writes `text` as a JSON string literal.
    public static func writeQuoted(_ text: String, to output: inout String) {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count + 2)
        writeQuoted(text, to: &bytes)
        output += String(decoding: bytes, as: UTF8.self)
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// Writes `text` as a JSON string literal, in UTF-8: what must be escaped is, everything else (`/` and all
    /// non-ASCII text included) is copied as it is.
    public static func writeQuoted(_ text: String, to output: inout [UInt8]) {
        output.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case UInt8(ascii: "\n"): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case UInt8(ascii: "\r"): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case UInt8(ascii: "\t"): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0x08: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "b")])
            case 0x0C: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "f")])
            case ..<0x20:
                output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")])
                output.append(contentsOf: [hexDigits[Int(byte >> 4)], hexDigits[Int(byte & 0xF)]])
            default: output.append(byte)
            }
        }
        output.append(UInt8(ascii: "\""))
    }
}

/// A member of a JSON object.
public struct JSONMember: Sendable, Equatable {
    public var key: String
    public var value: JSONValue

    public init(key: String, value: JSONValue) {
        self.key = key
        self.value = value
    }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.key.unicodeScalars.elementsEqual(rhs.key.unicodeScalars) && lhs.value == rhs.value
    }
}

/// A string key compared and hashed by its UTF-8 bytes: JSON names `"é"` and `"e\u0301"` are different members,
/// while Swift's `String` would merge them.
struct ExactKey: Hashable {
    let text: String

    init(_ text: String) { self.text = text }

    static func == (lhs: Self, rhs: Self) -> Bool { lhs.text.utf8.elementsEqual(rhs.text.utf8) }

    func hash(into hasher: inout Hasher) {
        var text = text
        text.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }
}

extension JSONScanner {
    /// Reads and validates the value at `position` into a tree.
    mutating func parseValue(depth: Int) throws(JSONError) -> JSONValue {
        guard position < bytes.count else { throw error(.unexpectedEnd(expected: "a JSON value")) }
        switch bytes[position] {
        case UInt8(ascii: "{"):
            guard depth < depthLimit else { throw error(.tooDeep(limit: depthLimit)) }
            position += 1
            skipWhitespace()
            var members: [JSONMember] = []
            if position < bytes.count, bytes[position] == UInt8(ascii: "}") {
                position += 1
                return .object(members)
            }
            while true {
                let name = try scanMemberName()
                let value = try parseValue(depth: depth + 1)
                members.append(JSONMember(key: decodeString(name.range, escaped: name.escaped), value: value))
                skipWhitespace()
                if try endOfContainer(closing: UInt8(ascii: "}"), what: "',' or '}' after an object member") {
                    return .object(members)
                }
            }
        case UInt8(ascii: "["):
            guard depth < depthLimit else { throw error(.tooDeep(limit: depthLimit)) }
            position += 1
            skipWhitespace()
            var elements: [JSONValue] = []
            if position < bytes.count, bytes[position] == UInt8(ascii: "]") {
                position += 1
                return .array(elements)
            }
            while true {
                elements.append(try parseValue(depth: depth + 1))
                skipWhitespace()
                if try endOfContainer(closing: UInt8(ascii: "]"), what: "',' or ']' after an array element") {
                    return .array(elements)
                }
            }
        case UInt8(ascii: "\""):
            let start = position + 1
            let escaped = try scanString()
            return .string(decodeString(start..<(position - 1), escaped: escaped))
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            let start = position
            try scanNumber()
            let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<position]), as: UTF8.self)
            return .number(JSONNumber(validated: text))
        case UInt8(ascii: "t"):
            try scanLiteral("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try scanLiteral("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try scanLiteral("null")
            return .null
        case let byte:
            throw error(.unexpectedByte(byte, expected: "a JSON value"))
        }
    }
}
