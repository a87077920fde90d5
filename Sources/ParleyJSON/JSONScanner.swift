import Foundation
import NIOCore

/// The kind of a JSON value, known from its first byte.
public enum JSONKind: String, Sendable, Hashable, Codable, CustomStringConvertible {
    case object, array, string, number, bool, null

    public var description: String { rawValue }

    /// The kind of the value that starts with `byte` (a value already known to be valid JSON).
    public init(firstByte byte: UInt8?) {
        switch byte {
        case UInt8(ascii: "{"): self = .object
        case UInt8(ascii: "["): self = .array
        case UInt8(ascii: "\""): self = .string
        case UInt8(ascii: "t"), UInt8(ascii: "f"): self = .bool
        case UInt8(ascii: "n"): self = .null
        default: self = .number
        }
    }
}

/// Limits shared by every reader in this module.
public enum JSONLimits {
    /// How deep objects and arrays may nest. Deep enough for any real app state, shallow enough that the
    /// recursive readers stay far from the end of a thread's stack (secondary threads have 512 KiB).
    public static let defaultDepth = 512
}

/// The byte-level reader under ``JSONValue``, ``JSONSkimmer`` and ``StateDiff``.
///
/// Two families of methods: the `scan…`/`validate…` ones check RFC 8259 strictly and throw ``JSONError`` with the
/// offset of the offending byte; the `skip…`/`…Ranges` ones assume the bytes were validated before and only find
/// where values end, which is what lets the differ walk two large documents without building trees.
///
/// The struct holds a pointer that is valid only inside the `withUnsafe…` closure that created it; it never
/// escapes one.
struct JSONScanner {
    let bytes: UnsafeBufferPointer<UInt8>
    var position: Int
    let depthLimit: Int
    /// Filled by validation when present: lets ``skipValue(at:)`` jump over an object or array instead of
    /// scanning it again, which is what makes walking a large document at several depths cheap.
    var containers: ContainerIndex?

    init(_ bytes: UnsafeBufferPointer<UInt8>, depthLimit: Int = JSONLimits.defaultDepth, indexingContainers: Bool = false) {
        self.bytes = bytes
        self.position = 0
        self.depthLimit = depthLimit
        self.containers = indexingContainers ? ContainerIndex() : nil
    }

    /// Where each object and array of a validated document ends, by where it starts.
    struct ContainerIndex {
        /// Ascending: containers are recorded as they open.
        private var starts: [Int] = []
        private var ends: [Int] = []

        mutating func open(at start: Int) -> Int {
            starts.append(start)
            ends.append(start)
            return starts.count - 1
        }

        mutating func close(_ slot: Int, endingAt end: Int) {
            ends[slot] = end
        }

        func end(ofContainerAt start: Int) -> Int? {
            var low = 0
            var high = starts.count
            while low < high {
                let middle = (low + high) / 2
                if starts[middle] < start { low = middle + 1 } else { high = middle }
            }
            return low < starts.count && starts[low] == start ? ends[low] : nil
        }
    }

    // MARK: - Validation

    func error(_ reason: JSONError.Reason, at offset: Int? = nil) -> JSONError {
        JSONError(offset: offset ?? position, reason: reason)
    }

    mutating func skipWhitespace() {
        while position < bytes.count {
            switch bytes[position] {
            case 0x20, 0x09, 0x0A, 0x0D: position += 1
            default: return
            }
        }
    }

    /// Checks that the whole buffer is one JSON value surrounded by optional whitespace.
    mutating func validateDocument() throws(JSONError) -> JSONKind {
        skipWhitespace()
        let kind = try validateValue(depth: 0)
        try expectEnd()
        return kind
    }

    mutating func expectEnd() throws(JSONError) {
        skipWhitespace()
        guard position == bytes.count else { throw error(.trailingContent) }
    }

    /// Validates the value at `position` (whitespace already skipped) and moves past it. `depth` counts the
    /// containers around the value.
    mutating func validateValue(depth: Int) throws(JSONError) -> JSONKind {
        guard position < bytes.count else { throw error(.unexpectedEnd(expected: "a JSON value")) }
        switch bytes[position] {
        case UInt8(ascii: "{"):
            try validateObject(depth: depth + 1)
            return .object
        case UInt8(ascii: "["):
            try validateArray(depth: depth + 1)
            return .array
        case UInt8(ascii: "\""):
            _ = try scanString()
            return .string
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            try scanNumber()
            return .number
        case UInt8(ascii: "t"):
            try scanLiteral("true")
            return .bool
        case UInt8(ascii: "f"):
            try scanLiteral("false")
            return .bool
        case UInt8(ascii: "n"):
            try scanLiteral("null")
            return .null
        case let byte:
            throw error(.unexpectedByte(byte, expected: "a JSON value"))
        }
    }

    mutating func validateObject(depth: Int) throws(JSONError) {
        guard depth <= depthLimit else { throw error(.tooDeep(limit: depthLimit)) }
        let slot = containers?.open(at: position)
        position += 1
        skipWhitespace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "}") {
            position += 1
        } else {
            while true {
                try scanMemberName()
                _ = try validateValue(depth: depth)
                skipWhitespace()
                if try endOfContainer(closing: UInt8(ascii: "}"), what: "',' or '}' after an object member") { break }
            }
        }
        if let slot { containers?.close(slot, endingAt: position) }
    }

    mutating func validateArray(depth: Int) throws(JSONError) {
        guard depth <= depthLimit else { throw error(.tooDeep(limit: depthLimit)) }
        let slot = containers?.open(at: position)
        position += 1
        skipWhitespace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "]") {
            position += 1
        } else {
            while true {
                _ = try validateValue(depth: depth)
                skipWhitespace()
                if try endOfContainer(closing: UInt8(ascii: "]"), what: "',' or ']' after an array element") { break }
            }
        }
        if let slot { containers?.close(slot, endingAt: position) }
    }

    /// Reads `"name"`, whitespace, `:` and whitespace; returns the name's content range and whether it holds
    /// escapes.
    @discardableResult
    mutating func scanMemberName() throws(JSONError) -> (range: Range<Int>, escaped: Bool) {
        let expected = "a member name (a string in double quotes)"
        guard position < bytes.count else { throw error(.unexpectedEnd(expected: expected)) }
        guard bytes[position] == UInt8(ascii: "\"") else { throw error(.unexpectedByte(bytes[position], expected: expected)) }
        let start = position + 1
        let escaped = try scanString()
        let range = start..<(position - 1)
        skipWhitespace()
        guard position < bytes.count else { throw error(.unexpectedEnd(expected: "':' after a member name")) }
        guard bytes[position] == UInt8(ascii: ":") else {
            throw error(.unexpectedByte(bytes[position], expected: "':' after a member name"))
        }
        position += 1
        skipWhitespace()
        return (range, escaped)
    }

    /// After a member or element: consumes `,` (and the whitespace after it) and returns false, or consumes the
    /// closing bracket and returns true.
    mutating func endOfContainer(closing: UInt8, what: String) throws(JSONError) -> Bool {
        guard position < bytes.count else { throw error(.unexpectedEnd(expected: what)) }
        switch bytes[position] {
        case UInt8(ascii: ","):
            position += 1
            skipWhitespace()
            return false
        case closing:
            position += 1
            return true
        case let byte:
            throw error(.unexpectedByte(byte, expected: what))
        }
    }

    mutating func scanLiteral(_ literal: StaticString) throws(JSONError) {
        let start = position
        let count = literal.utf8CodeUnitCount
        let expected = "'\(literal)'"
        for index in 0..<count {
            guard position < bytes.count else { throw error(.unexpectedEnd(expected: expected), at: start) }
            guard bytes[position] == literal.utf8Start[index] else {
                throw error(.unexpectedByte(bytes[position], expected: expected))
            }
            position += 1
        }
    }

    /// Validates a number per RFC 8259 §6 and moves past it.
    mutating func scanNumber() throws(JSONError) {
        let start = position
        if bytes[position] == UInt8(ascii: "-") { position += 1 }
        guard position < bytes.count, isDigit(bytes[position]) else {
            throw error(.invalidNumber("'-' must be followed by a digit"), at: start)
        }
        if bytes[position] == UInt8(ascii: "0") {
            position += 1
            if position < bytes.count, isDigit(bytes[position]) {
                throw error(.invalidNumber("leading zeros are not allowed"), at: start)
            }
        } else {
            skipDigits()
        }
        if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
            position += 1
            guard position < bytes.count, isDigit(bytes[position]) else {
                throw error(.invalidNumber("a '.' must be followed by digits"), at: start)
            }
            skipDigits()
        }
        if position < bytes.count, bytes[position] | 0x20 == UInt8(ascii: "e") {
            position += 1
            if position < bytes.count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") {
                position += 1
            }
            guard position < bytes.count, isDigit(bytes[position]) else {
                throw error(.invalidNumber("an exponent needs digits"), at: start)
            }
            skipDigits()
        }
    }

    private mutating func skipDigits() {
        while position < bytes.count, isDigit(bytes[position]) { position += 1 }
    }

    /// Validates a string starting at its opening quote and moves past the closing one. Returns whether the
    /// string holds escapes (without any, its content bytes are its UTF-8 text).
    mutating func scanString() throws(JSONError) -> Bool {
        position += 1
        var escaped = false
        while position < bytes.count {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                position += 1
                return escaped
            } else if byte == UInt8(ascii: "\\") {
                escaped = true
                try scanEscape()
            } else if byte < 0x20 {
                throw error(.controlCharacterInString(byte))
            } else if byte < 0x80 {
                position += 1
            } else {
                try scanUTF8Sequence()
            }
        }
        throw error(.unexpectedEnd(expected: "the closing '\"' of a string"))
    }

    private mutating func scanEscape() throws(JSONError) {
        let start = position
        guard position + 1 < bytes.count else { throw error(.unexpectedEnd(expected: "an escape after '\\'")) }
        switch bytes[position + 1] {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
            UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
            position += 2
        case UInt8(ascii: "u"):
            let unit = try hexEscape(at: position)
            position += 6
            if (0xDC00...0xDFFF).contains(unit) { throw error(.unpairedSurrogate, at: start) }
            if (0xD800...0xDBFF).contains(unit) {
                guard position + 1 < bytes.count, bytes[position] == UInt8(ascii: "\\"), bytes[position + 1] == UInt8(ascii: "u")
                else { throw error(.unpairedSurrogate, at: start) }
                let low = try hexEscape(at: position)
                guard (0xDC00...0xDFFF).contains(low) else { throw error(.unpairedSurrogate, at: start) }
                position += 6
            }
        default:
            throw error(.invalidEscape, at: start)
        }
    }

    /// The code unit of `\uXXXX` at `offset` (the backslash).
    private func hexEscape(at offset: Int) throws(JSONError) -> UInt16 {
        guard offset + 6 <= bytes.count else { throw error(.unexpectedEnd(expected: "four hex digits after \\u"), at: offset) }
        var unit: UInt16 = 0
        for index in (offset + 2)..<(offset + 6) {
            guard let digit = hexValue(bytes[index]) else { throw error(.invalidEscape, at: offset) }
            unit = unit << 4 | UInt16(digit)
        }
        return unit
    }

    /// Checks one multi-byte UTF-8 sequence against the well-formed table of Unicode §3.9 (no overlong forms, no
    /// surrogates, nothing above U+10FFFF).
    private mutating func scanUTF8Sequence() throws(JSONError) {
        let lead = bytes[position]
        let length: Int
        var secondRange: ClosedRange<UInt8> = 0x80...0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; secondRange = 0xA0...0xBF
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED: length = 3; secondRange = 0x80...0x9F
        case 0xF0: length = 4; secondRange = 0x90...0xBF
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; secondRange = 0x80...0x8F
        default: throw error(.invalidUTF8)
        }
        guard position + length <= bytes.count else { throw error(.invalidUTF8) }
        guard secondRange.contains(bytes[position + 1]) else { throw error(.invalidUTF8) }
        for index in (position + 2)..<(position + length) where bytes[index] & 0xC0 != 0x80 {
            throw error(.invalidUTF8)
        }
        position += length
    }

    // MARK: - Walking validated bytes

    /// The end of the validated value starting at `start`.
    func skipValue(at start: Int) -> Int {
        switch bytes[start] {
        case UInt8(ascii: "\""):
            return skipString(at: start).end
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            if let end = containers?.end(ofContainerAt: start) { return end }
            var depth = 0
            var index = start
            repeat {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    index = skipString(at: index).end
                    continue
                }
                if byte == UInt8(ascii: "{") || byte == UInt8(ascii: "[") {
                    depth += 1
                } else if byte == UInt8(ascii: "}") || byte == UInt8(ascii: "]") {
                    depth -= 1
                }
                index += 1
            } while depth > 0
            return index
        case UInt8(ascii: "t"), UInt8(ascii: "n"):
            return start + 4
        case UInt8(ascii: "f"):
            return start + 5
        default:
            var index = start + 1
            while index < bytes.count, isNumberByte(bytes[index]) { index += 1 }
            return index
        }
    }

    /// The end of the validated string whose opening quote is at `start`, and whether it holds escapes.
    func skipString(at start: Int) -> (end: Int, escaped: Bool) {
        var index = start + 1
        var escaped = false
        while true {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") { return (index + 1, escaped) }
            if byte == UInt8(ascii: "\\") {
                escaped = true
                index += 2
            } else {
                index += 1
            }
        }
    }

    func skipWhitespace(from start: Int) -> Int {
        var index = start
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return index
            }
        }
        return index
    }

    func kind(at offset: Int) -> JSONKind { JSONKind(firstByte: bytes[offset]) }

    /// A member of a validated object: where its name's text is (between the quotes) and where its value is.
    struct MemberRanges {
        var name: Range<Int>
        var nameEscaped: Bool
        var value: Range<Int>
    }

    /// The members of the validated object whose `{` is at `start`, in document order.
    func memberRanges(ofObjectAt start: Int) -> [MemberRanges] {
        var members: [MemberRanges] = []
        var index = skipWhitespace(from: start + 1)
        guard bytes[index] != UInt8(ascii: "}") else { return members }
        while true {
            let (nameEnd, escaped) = skipString(at: index)
            let name = (index + 1)..<(nameEnd - 1)
            index = skipWhitespace(from: skipWhitespace(from: nameEnd) + 1)
            let valueEnd = skipValue(at: index)
            members.append(MemberRanges(name: name, nameEscaped: escaped, value: index..<valueEnd))
            index = skipWhitespace(from: valueEnd)
            guard bytes[index] == UInt8(ascii: ",") else { return members }
            index = skipWhitespace(from: index + 1)
        }
    }

    /// The elements of the validated array whose `[` is at `start`.
    func elementRanges(ofArrayAt start: Int) -> [Range<Int>] {
        var elements: [Range<Int>] = []
        var index = skipWhitespace(from: start + 1)
        guard bytes[index] != UInt8(ascii: "]") else { return elements }
        while true {
            let end = skipValue(at: index)
            elements.append(index..<end)
            index = skipWhitespace(from: end)
            guard bytes[index] == UInt8(ascii: ",") else { return elements }
            index = skipWhitespace(from: index + 1)
        }
    }

    /// The text of a validated string's content (the bytes between its quotes), escapes decoded.
    func decodeString(_ content: Range<Int>, escaped: Bool) -> String {
        guard escaped else {
            return String(decoding: UnsafeBufferPointer(rebasing: bytes[content]), as: UTF8.self)
        }
        var utf8: [UInt8] = []
        utf8.reserveCapacity(content.count)
        var index = content.lowerBound
        while index < content.upperBound {
            let byte = bytes[index]
            guard byte == UInt8(ascii: "\\") else {
                utf8.append(byte)
                index += 1
                continue
            }
            let escape = bytes[index + 1]
            index += 2
            switch escape {
            case UInt8(ascii: "b"): utf8.append(0x08)
            case UInt8(ascii: "f"): utf8.append(0x0C)
            case UInt8(ascii: "n"): utf8.append(0x0A)
            case UInt8(ascii: "r"): utf8.append(0x0D)
            case UInt8(ascii: "t"): utf8.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = UInt32(uncheckedHex(at: index))
                index += 4
                if (0xD800...0xDBFF).contains(scalar) {
                    let low = UInt32(uncheckedHex(at: index + 2))
                    index += 6
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                }
                // Validation guarantees a scalar value (surrogates come only in pairs).
                utf8.append(contentsOf: UTF8.encode(Unicode.Scalar(scalar)!)!)
            default: utf8.append(escape)  // " \ /
            }
        }
        return String(decoding: utf8, as: UTF8.self)
    }

    private func uncheckedHex(at offset: Int) -> UInt16 {
        var unit: UInt16 = 0
        for index in offset..<(offset + 4) { unit = unit << 4 | UInt16(hexValue(bytes[index]) ?? 0) }
        return unit
    }

    /// The validated value at `range` with the whitespace between tokens removed: the exact JSON text of the
    /// value (strings and numbers untouched), compact.
    func compactText(_ range: Range<Int>) -> String {
        var output: [UInt8] = []
        output.reserveCapacity(range.count)
        var index = range.lowerBound
        while index < range.upperBound {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                let end = skipString(at: index).end
                output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[index..<end]))
                index = end
            case 0x20, 0x09, 0x0A, 0x0D:
                index += 1
            default:
                output.append(byte)
                index += 1
            }
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Whether two validated ranges, possibly of different buffers, hold the same bytes.
    static func sameBytes(_ left: UnsafeBufferPointer<UInt8>, _ leftRange: Range<Int>, _ right: UnsafeBufferPointer<UInt8>, _ rightRange: Range<Int>) -> Bool {
        guard leftRange.count == rightRange.count else { return false }
        guard leftRange.count > 0 else { return true }
        return memcmp(left.baseAddress! + leftRange.lowerBound, right.baseAddress! + rightRange.lowerBound, leftRange.count) == 0
    }
}

@inline(__always) func isDigit(_ byte: UInt8) -> Bool { byte &- UInt8(ascii: "0") < 10 }

@inline(__always) private func isNumberByte(_ byte: UInt8) -> Bool {
    isDigit(byte) || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "+") || byte | 0x20 == UInt8(ascii: "e")
}

@inline(__always) private func hexValue(_ byte: UInt8) -> UInt8? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
    default: nil
    }
}

extension ByteBuffer {
    /// Runs `body` over the readable bytes; offsets the scanner reports count from the reader index.
    func withJSONBytes<Result>(_ body: (UnsafeBufferPointer<UInt8>) throws(JSONError) -> Result) throws(JSONError) -> Result {
        let outcome: Swift.Result<Result, JSONError> = withUnsafeReadableBytes { raw in
            Swift.Result { () throws(JSONError) -> Result in try body(raw.assumingMemoryBound(to: UInt8.self)) }
        }
        return try outcome.get()
    }
}
