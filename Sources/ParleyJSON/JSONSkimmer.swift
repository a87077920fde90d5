import NIOCore

/// Validates JSON documents without building a tree, and finds the byte ranges of a top-level object's members:
/// what cuts the raw `state` out of a payload so that it is stored and replayed without being re-encoded.
///
/// Every offset and range counts bytes from the document's first byte (for a `ByteBuffer`, its reader index).
public enum JSONSkimmer {
    /// A member of the top-level object.
    public struct Member: Sendable, Hashable {
        /// The member's name, escapes decoded.
        public var key: String
        public var kind: JSONKind
        /// Where the value's text is, from its first byte to its last (no surrounding whitespace).
        public var valueRange: Range<Int>

        public init(key: String, kind: JSONKind, valueRange: Range<Int>) {
            self.key = key
            self.kind = kind
            self.valueRange = valueRange
        }
    }

    /// Checks that `document` is exactly one JSON value (optional whitespace around it) and says what kind.
    @discardableResult
    public static func validate(_ document: ByteBuffer, depthLimit: Int = JSONLimits.defaultDepth) throws(JSONError) -> JSONKind {
        try document.withJSONBytes { bytes throws(JSONError) in
            var scanner = JSONScanner(bytes, depthLimit: depthLimit)
            return try scanner.validateDocument()
        }
    }

    /// Validates the whole document and returns the members of its top-level object in document order
    /// (duplicates included), or nil when the document is valid JSON but not an object.
    public static func topLevelMembers(of document: ByteBuffer, depthLimit: Int = JSONLimits.defaultDepth) throws(JSONError) -> [Member]? {
        try document.withJSONBytes { bytes throws(JSONError) -> [Member]? in
            var scanner = JSONScanner(bytes, depthLimit: depthLimit)
            scanner.skipWhitespace()
            guard scanner.position < bytes.count, bytes[scanner.position] == UInt8(ascii: "{") else {
                _ = try scanner.validateDocument()
                return nil
            }
            guard depthLimit >= 1 else { throw scanner.error(.tooDeep(limit: depthLimit)) }
            scanner.position += 1
            scanner.skipWhitespace()
            var members: [Member] = []
            if scanner.position < bytes.count, bytes[scanner.position] == UInt8(ascii: "}") {
                scanner.position += 1
            } else {
                while true {
                    let name = try scanner.scanMemberName()
                    let start = scanner.position
                    let kind = try scanner.validateValue(depth: 1)
                    members.append(Member(key: scanner.decodeString(name.range, escaped: name.escaped), kind: kind, valueRange: start..<scanner.position))
                    scanner.skipWhitespace()
                    if try scanner.endOfContainer(closing: UInt8(ascii: "}"), what: "',' or '}' after an object member") { break }
                }
            }
            try scanner.expectEnd()
            return members
        }
    }
}
