/// Why a byte sequence is not a JSON document (RFC 8259), and where: `offset` counts bytes from the start of
/// the document (0 = its first byte), so that a tool can point at the exact spot.
public struct JSONError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Reason: Sendable, Hashable {
        /// The input ended while `expected` was still missing (an empty document says "a JSON value").
        case unexpectedEnd(expected: String)
        /// A byte that cannot start or continue what was expected here.
        case unexpectedByte(UInt8, expected: String)
        /// A number that breaks the RFC 8259 grammar (leading zeros, a lone `-`, `1.`, `1e`, …).
        case invalidNumber(String)
        /// A backslash not followed by one of `" \ / b f n r t u`, or `\u` not followed by four hex digits.
        case invalidEscape
        /// A `\uD800`–`\uDFFF` escape that is not part of a high + low surrogate pair.
        case unpairedSurrogate
        /// A string holds a byte sequence that is not UTF-8 (RFC 8259 §8.1 requires UTF-8).
        case invalidUTF8
        /// A byte below 0x20 inside a string: it must be escaped (`\n`, `\u0001`, …).
        case controlCharacterInString(UInt8)
        /// Objects and arrays nest deeper than the reader allows.
        case tooDeep(limit: Int)
        /// A complete value was followed by something other than whitespace.
        case trailingContent
    }

    public var offset: Int
    public var reason: Reason

    public init(offset: Int, reason: Reason) {
        self.offset = offset
        self.reason = reason
    }

    public var description: String {
        "invalid JSON at byte \(offset): " + reason.description
    }
}

extension JSONError.Reason: CustomStringConvertible {
    public var description: String {
        switch self {
        case .unexpectedEnd(let expected):
            "the text ends where \(expected) was expected"
        case .unexpectedByte(let byte, let expected):
            "expected \(expected), found \(Self.show(byte))"
        case .invalidNumber(let problem):
            "invalid number: \(problem)"
        case .invalidEscape:
            #"invalid escape in a string (allowed: \" \\ \/ \b \f \n \r \t \uXXXX)"#
        case .unpairedSurrogate:
            #"a \u escape names half of a UTF-16 surrogate pair without the other half"#
        case .invalidUTF8:
            "a string is not valid UTF-8"
        case .controlCharacterInString(let byte):
            "control character \(Self.show(byte)) inside a string (escape it, e.g. \\n or \\u00XX)"
        case .tooDeep(let limit):
            "objects and arrays nest deeper than \(limit) levels"
        case .trailingContent:
            "more text follows the JSON value (a document holds exactly one value)"
        }
    }

    private static func show(_ byte: UInt8) -> String {
        let hex = "0x" + (byte < 0x10 ? "0" : "") + String(byte, radix: 16, uppercase: true)
        guard byte >= 0x20, byte < 0x7F else { return hex }
        return "'\(Character(Unicode.Scalar(byte)))' (\(hex))"
    }
}
