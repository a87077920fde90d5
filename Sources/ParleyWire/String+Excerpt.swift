extension String {
    /// At most `maximumBytes` of UTF-8 (cut at a character boundary, then `…`). For text a peer chose that ends
    /// up in our log lines or close reasons: its length is bounded only by the frame size (64 MiB by default),
    /// and echoing or logging it whole would let a peer flood the log, or have its bytes reflected back at it.
    public func excerpt(maximumBytes: Int = 512) -> String {
        guard utf8.count > maximumBytes else { return self }
        var result = ""
        var bytes = 0
        for character in self {
            let size = character.utf8.count
            guard bytes + size <= maximumBytes else { break }
            result.append(character)
            bytes += size
        }
        return result + "…"
    }
}

extension String {
    /// Text that came from the network, made safe to show to a person in a terminal or a log: every character
    /// that could drive the terminal, forge a line or reorder what is shown becomes a visible escape — C0 controls
    /// and DEL (`\n`, `\r`, `\t`, else `\x1b`), C1 controls (`\x9b`), the line and paragraph separators
    /// (`\u2028`, `\u2029`) and the bidirectional embeddings, overrides and isolates (`\u202e`, …) — and the result
    /// keeps at most `maximumBytes` bytes of the text, with `…` where it was cut.
    public func escapedForPeople(maximumBytes: Int = 512) -> String {
        var result = ""
        var bytes = 0
        for scalar in unicodeScalars {
            let shown: String
            switch scalar.value {
            case 0x0A: shown = "\\n"
            case 0x0D: shown = "\\r"
            case 0x09: shown = "\\t"
            case 0..<0x20, 0x7F...0x9F: shown = "\\x" + Self.hex(scalar.value, digits: 2)
            case _ where scalar.isUnsafeForPeople: shown = scalar.unicodeEscaped
            default: shown = String(scalar)
            }
            guard bytes + shown.utf8.count <= maximumBytes else { return result + "…" }
            result += shown
            bytes += shown.utf8.count
        }
        return result
    }

    /// Whether ``escapedForPeople(maximumBytes:)`` would escape anything (so that plain text costs no copy).
    public var needsEscapingForPeople: Bool { unicodeScalars.contains(where: \.isUnsafeForPeople) }

    fileprivate static func hex(_ value: UInt32, digits: Int) -> String {
        let text = String(value, radix: 16)
        return String(repeating: "0", count: Swift.max(0, digits - text.count)) + text
    }
}

extension Unicode.Scalar {
    /// One of the characters ``Swift/String/escapedForPeople(maximumBytes:)`` escapes: C0 and C1 controls, DEL,
    /// the line and paragraph separators, and the bidirectional marks, embeddings, overrides and isolates.
    public var isUnsafeForPeople: Bool {
        switch value {
        case 0..<0x20, 0x7F...0x9F, 0x2028, 0x2029, 0x202A...0x202E, 0x2066...0x2069, 0x200E, 0x200F, 0x061C: true
        default: false
        }
    }

    /// `\uXXXX`: the form both a person and a JSON parser read (for characters of the Basic Multilingual Plane).
    public var unicodeEscaped: String { "\\u" + String.hex(value, digits: 4) }
}
