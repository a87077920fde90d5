/// The name to try next when an instance name is taken, in the platform's own style, so that a service renamed by
/// Parley looks like every other renamed service there.
///
/// Avahi's compatibility library renames a service itself when another host claims its name (with Avahi's rule),
/// but answers `kDNSServiceErr_NameConflict` when a service on the same host holds it; Parley then renames by the
/// same rule, so that both cases read alike. On Apple platforms mDNSResponder renames in both cases and reports the
/// new name; the Bonjour rule is used only if a conflict is ever reported instead.
enum AlternativeName {
    enum Style {
        /// `Kitchen` → `Kitchen #2` → `Kitchen #3` (Avahi's `avahi_alternative_service_name`).
        case avahi
        /// `Kitchen` → `Kitchen (2)` → `Kitchen (3)` (mDNSResponder's).
        case bonjour

        static var platform: Style {
            #if os(Linux)
            .avahi
            #else
            .bonjour
            #endif
        }
    }

    /// The longest instance name DNS-SD allows, in bytes of UTF-8.
    static let maximumLength = 63

    /// The next name after `name`: its number raised by one, or 2 if it has none; the rest cut (never inside a
    /// character) so that the whole stays within 63 bytes.
    static func next(after name: String, style: Style = .platform) -> String {
        let (base, number) = split(name, style: style)
        let suffix: String
        switch style {
        case .avahi: suffix = " #\(number + 1)"
        case .bonjour: suffix = " (\(number + 1))"
        }
        return prefix(of: base, fittingUTF8Bytes: maximumLength - suffix.utf8.count) + suffix
    }

    /// The name without its number, and the number (1 if it has none: the next is 2).
    private static func split(_ name: String, style: Style) -> (base: Substring, number: Int) {
        let none = (Substring(name), 1)
        switch style {
        case .avahi:
            // The number after the last " #", if all digits and not starting with 0.
            guard let marker = name.range(of: " #", options: .backwards) else { return none }
            let digits = name[marker.upperBound...]
            guard let number = positiveNumber(digits) else { return none }
            return (name[..<marker.lowerBound], number)
        case .bonjour:
            guard name.hasSuffix(")"), let open = name.range(of: " (", options: .backwards) else { return none }
            let digits = name[open.upperBound..<name.index(before: name.endIndex)]
            guard let number = positiveNumber(digits) else { return none }
            return (name[..<open.lowerBound], number)
        }
    }

    private static func positiveNumber(_ digits: Substring) -> Int? {
        guard let first = digits.first, first != "0", digits.allSatisfy({ $0.isASCII && $0.isNumber }),
            let number = Int(digits), number < Int.max
        else { return nil }
        return number
    }

    private static func prefix(of text: Substring, fittingUTF8Bytes limit: Int) -> Substring {
        var size = 0
        var end = text.startIndex
        for index in text.indices {
            size += text[index].utf8.count
            if size > limit { break }
            end = text.index(after: index)
        }
        return text[..<end]
    }
}
