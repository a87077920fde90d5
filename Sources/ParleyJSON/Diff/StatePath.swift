/// Where a value sits in a state: object member names and array indices from the root.
///
/// In JSON (``StateDiff``'s `--json` form) a path is an array of names and indices: `["items", 2, "title"]`.
/// As text it reads `items[2].title`; names that are not plain words are quoted (`["window size"].width`), and
/// the root itself is `(root)`.
public struct StatePath: Sendable, Hashable, Codable, CustomStringConvertible, ExpressibleByArrayLiteral {
    public enum Component: Sendable, Hashable, Codable, CustomStringConvertible, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral {
        case key(String)
        case index(Int)

        public init(stringLiteral value: String) { self = .key(value) }
        public init(integerLiteral value: Int) { self = .index(value) }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let index = try? container.decode(Int.self) {
                self = .index(index)
            } else {
                self = .key(try container.decode(String.self))
            }
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .key(let key): try container.encode(key)
            case .index(let index): try container.encode(index)
            }
        }

        /// The label of this step in the text rendering: `[2]`, `title`, or `"two words"`.
        public var description: String {
            switch self {
            case .index(let index): return "[\(index)]"
            case .key(let key):
                guard Self.isPlain(key) else {
                    var quoted = ""
                    JSONValue.writeQuoted(key, to: &quoted)
                    return quoted
                }
                return key
            }
        }

        /// A name prints bare unless it could be misread: empty, or holding spaces, control characters, quotes,
        /// backslashes, colons, dots or brackets. Letters of any script are plain.
        static func isPlain(_ key: String) -> Bool {
            !key.isEmpty
                && key.unicodeScalars.allSatisfy { scalar in
                    !(scalar.properties.isWhitespace || scalar.value < 0x20 || scalar.value == 0x7F
                        || "\"\\:.[]".unicodeScalars.contains(scalar))
                }
        }
    }

    public var components: [Component]

    public init(_ components: [Component] = []) {
        self.components = components
    }

    public init(arrayLiteral elements: Component...) {
        self.components = elements
    }

    public init(from decoder: any Decoder) throws {
        components = try [Component](from: decoder)
    }

    public func encode(to encoder: any Encoder) throws {
        try components.encode(to: encoder)
    }

    public var isRoot: Bool { components.isEmpty }

    public func appending(_ component: Component) -> StatePath {
        StatePath(components + [component])
    }

    /// `items[2].title`; `(root)` for the root.
    public var description: String {
        guard !components.isEmpty else { return "(root)" }
        var text = ""
        for component in components {
            switch component {
            case .index: text += component.description
            case .key:
                if component.description.hasPrefix("\"") {
                    text += "[" + component.description + "]"
                } else {
                    if !text.isEmpty { text += "." }
                    text += component.description
                }
            }
        }
        return text
    }
}
