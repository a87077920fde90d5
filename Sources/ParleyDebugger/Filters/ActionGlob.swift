/// A pattern on action text: `*` matches any run of characters (none included), `?` exactly one, `\` makes the
/// next character literal (`\*`, `\?`, `\\`); everything else matches itself, case-sensitively. The pattern
/// covers the whole action: `hover*` matches `hoverChanged(…)` but not `mouseHover`.
///
/// "Character" means Unicode scalar, as in SQLite's `GLOB`, into which the history store translates patterns.
public struct ActionGlob: Sendable, Hashable, CustomStringConvertible {
    public enum Element: Sendable, Hashable {
        case literal(Unicode.Scalar)
        /// `?`
        case anyOne
        /// `*`
        case anyRun
    }

    public let pattern: String
    public let elements: [Element]

    public init(_ pattern: String) throws(ActionFilterError) {
        var elements: [Element] = []
        var escaping = false
        for scalar in pattern.unicodeScalars {
            if escaping {
                elements.append(.literal(scalar))
                escaping = false
                continue
            }
            switch scalar {
            case "\\": escaping = true
            case "*": if elements.last != .anyRun { elements.append(.anyRun) }
            case "?": elements.append(.anyOne)
            default: elements.append(.literal(scalar))
            }
        }
        guard !escaping else {
            throw .invalidPattern(pattern, reason: "it ends with a lone '\\' (write '\\\\' for a backslash)")
        }
        self.pattern = pattern
        self.elements = elements
    }

    public func matches(_ action: String) -> Bool {
        let text = Array(action.unicodeScalars)
        var textIndex = 0
        var elementIndex = 0
        // Where the last `*` was and how much text it has swallowed so far: on a mismatch it takes one more.
        var starElement = -1
        var starText = 0
        while textIndex < text.count {
            if elementIndex < elements.count {
                switch elements[elementIndex] {
                case .anyRun:
                    starElement = elementIndex
                    starText = textIndex
                    elementIndex += 1
                    continue
                case .anyOne:
                    textIndex += 1
                    elementIndex += 1
                    continue
                case .literal(let scalar) where scalar == text[textIndex]:
                    textIndex += 1
                    elementIndex += 1
                    continue
                case .literal:
                    break
                }
            }
            guard starElement >= 0 else { return false }
            starText += 1
            textIndex = starText
            elementIndex = starElement + 1
        }
        return elements[elementIndex...].allSatisfy { $0 == .anyRun }
    }

    public var description: String { pattern }
}
