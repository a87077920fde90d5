import Foundation

/// A drawer as an app declared it, with the rules every value set from outside must meet. parleyd checks a `Set`
/// against it before the app sees it, and the app checks again (docs/drawer.md).
public struct DrawerDeclaration: Sendable, Hashable {
    public private(set) var items: [DrawerItem]

    // The limits of docs/drawer.md (Items). Bytes are UTF-8 bytes.
    public static let maximumItems = 256
    /// An item's id, and a choice option's id: 1 to this many bytes.
    public static let maximumIDBytes = 128
    /// An item's label, its section, and a choice option's label.
    public static let maximumLabelBytes = 256
    public static let maximumOptions = 256
    /// An info item's value.
    public static let maximumInfoBytes = 4096
    public static let defaultMaxTextLength = 4096
    /// The largest `maxLength` a text may declare (code points).
    public static let maximumTextLength = 65536
    /// A `parley.drawer.Declare` payload, as JSON on the wire: 256 KiB. parleyd refuses a larger one before
    /// decoding it.
    public static let maximumDeclareBytes = 256 * 1024

    /// That a `Declare` payload of `bytes` bytes is within ``maximumDeclareBytes``.
    public static func checkDeclareSize(_ bytes: Int) throws(DrawerError) {
        guard bytes <= maximumDeclareBytes else { throw .declarationTooLarge(bytes: bytes) }
    }

    /// That a `Changed` payload of `bytes` bytes is within ``maximumDeclareBytes`` too: any value a drawer can hold
    /// fits in a declaration, and parleyd keeps what an app reports (even outside its rules), so without a bound an
    /// app could make parleyd hold a frame's worth of text per item.
    public static func checkChangedSize(_ bytes: Int) throws(DrawerError) {
        guard bytes <= maximumDeclareBytes else { throw .changeTooLarge(bytes: bytes) }
    }

    /// Checks the declaration itself: ids unique and of a sane size, values of the right kind.
    public init(items: [DrawerItem]) throws(DrawerError) {
        guard items.count <= Self.maximumItems else {
            throw .invalidDeclaration("\(items.count) items; a drawer holds at most \(Self.maximumItems)")
        }
        var seen: Set<String> = []
        for item in items {
            guard !item.id.isEmpty, item.id.utf8.count <= Self.maximumIDBytes else {
                throw .invalidDeclaration("an item id must be 1–\(Self.maximumIDBytes) bytes")
            }
            guard seen.insert(item.id).inserted else { throw .invalidDeclaration("item \"\(item.id)\" is declared twice") }
            guard item.label.utf8.count <= Self.maximumLabelBytes, (item.section ?? "").utf8.count <= Self.maximumLabelBytes else {
                throw .invalidDeclaration("item \"\(item.id)\": labels are at most \(Self.maximumLabelBytes) bytes")
            }
            if item.destructive == true, item.kind != .action {
                // Only an action asks before it runs: a setting marked so would change without the question its
                // author expects.
                throw .invalidDeclaration("\(item.kind) \"\(item.id)\": only an action can be destructive")
            }
            if item.kind == .choice {
                guard let options = item.options, !options.isEmpty, options.count <= Self.maximumOptions else {
                    throw .invalidDeclaration("choice \"\(item.id)\" needs 1–\(Self.maximumOptions) options")
                }
                for option in options {
                    guard !option.id.isEmpty, option.id.utf8.count <= Self.maximumIDBytes else {
                        throw .invalidDeclaration("choice \"\(item.id)\": an option id must be 1–\(Self.maximumIDBytes) bytes")
                    }
                    guard option.label.utf8.count <= Self.maximumLabelBytes else {
                        throw .invalidDeclaration("choice \"\(item.id)\": option labels are at most \(Self.maximumLabelBytes) bytes")
                    }
                }
                guard Set(options.map(\.id)).count == options.count else {
                    throw .invalidDeclaration("choice \"\(item.id)\" lists an option twice")
                }
            }
            if let maxLength = item.maxLength, !(0...Self.maximumTextLength).contains(maxLength) {
                throw .invalidDeclaration("text \"\(item.id)\": maxLength must be 0–\(Self.maximumTextLength)")
            }
            if item.kind == .info, let value = item.value {
                guard case .string(let text) = value else {
                    throw .invalidDeclaration("info \"\(item.id)\": its value is \(value.typeName); info is text")
                }
                guard text.utf8.count <= Self.maximumInfoBytes else {
                    throw .invalidDeclaration("info \"\(item.id)\": its value is \(text.utf8.count) bytes, above \(Self.maximumInfoBytes)")
                }
            }
            if let min = item.min, let max = item.max, min > max {
                throw .invalidDeclaration("number \"\(item.id)\": min \(min) is above max \(max)")
            }
            if let step = item.step, !(step > 0) { throw .invalidDeclaration("number \"\(item.id)\": step must be positive") }
            if let value = item.value, item.kind != .action, item.kind != .info {
                // The app's own current value must fit its own rules.
                do {
                    _ = try Self.check(value, for: item)
                } catch {
                    throw .invalidDeclaration("item \"\(item.id)\": its value \(value) does not fit: \(error)")
                }
            }
        }
        self.items = items
    }

    public subscript(id: String) -> DrawerItem? { items.first { $0.id == id } }

    /// The value `value` for item `id`, if it may be set: the item exists, can be set, and the value fits.
    public func validateSet(_ id: String, _ value: DrawerValue) throws(DrawerError) -> DrawerValue {
        let item = try item(id)
        guard item.isSettable else { throw .notSettable(item: id, kind: item.kind) }
        return try Self.check(value, for: item)
    }

    /// That item `id` exists and is an action.
    public func validateInvoke(_ id: String) throws(DrawerError) {
        let item = try item(id)
        guard item.kind == .action else { throw .notAnAction(item: id, kind: item.kind) }
    }

    /// Records a value now in effect (set from outside, or changed by the app).
    public mutating func update(_ id: String, to value: DrawerValue) {
        guard let index = items.firstIndex(where: { $0.id == id }) else { return }
        items[index].value = value
    }

    private func item(_ id: String) throws(DrawerError) -> DrawerItem {
        guard let item = self[id] else { throw .unknownItem(id, known: items.map(\.id)) }
        return item
    }

    static func check(_ value: DrawerValue, for item: DrawerItem) throws(DrawerError) -> DrawerValue {
        switch (item.kind, value) {
        case (.toggle, .bool):
            return value
        case (.choice, .string(let option)):
            let options = item.options ?? []
            guard options.contains(where: { $0.id == option }) else {
                throw .unknownOption(item: item.id, option, options: options.map(\.id))
            }
            return value
        case (.text, .string(let text)):
            // Counted in Unicode code points: what every language counts the same way (Python's len, JavaScript's
            // [...text].length), unlike characters or UTF-16 units.
            let limit = item.maxLength ?? Self.defaultMaxTextLength
            let length = text.unicodeScalars.count
            guard length <= limit else { throw .tooLong(item: item.id, length: length, limit: limit) }
            return value
        case (.number, .number(let number)):
            guard number.isFinite else { throw .wrongType(item: item.id, expected: "a finite number", got: value) }
            if let min = item.min, number < min { throw .outOfRange(item: item.id, number, min: item.min, max: item.max) }
            if let max = item.max, number > max { throw .outOfRange(item: item.id, number, min: item.min, max: item.max) }
            if let step = item.step {
                let base = item.min ?? 0
                let steps = (number - base) / step
                // Decimal steps (0.1) are not exact in binary: within a millionth of a step the value is on the step,
                // and is passed on snapped to it (0.30000000000000004 becomes what 0.3 is in binary).
                guard abs(steps - steps.rounded()) < 1e-6 else { throw .offStep(item: item.id, number, step: step, base: base) }
                // 12 significant digits: base + n × step brings its own binary error (7 × 0.1 is 0.7000000000000001).
                let snapped = base + steps.rounded() * step
                return .number(Double(String(format: "%.12g", snapped)) ?? snapped)
            }
            return value
        case (.toggle, _):
            throw .wrongType(item: item.id, expected: "true or false", got: value)
        case (.choice, _):
            throw .wrongType(item: item.id, expected: "an option id (a string)", got: value)
        case (.text, _):
            throw .wrongType(item: item.id, expected: "a string", got: value)
        case (.number, _):
            throw .wrongType(item: item.id, expected: "a number", got: value)
        case (.action, _), (.info, _):
            throw .notSettable(item: item.id, kind: item.kind)
        }
    }
}

/// Why a drawer value, invocation or declaration was refused; the text is what parleyctl and the web show.
public enum DrawerError: Error, Sendable, Hashable, CustomStringConvertible {
    case unknownItem(String, known: [String])
    case notSettable(item: String, kind: DrawerItem.Kind)
    case notAnAction(item: String, kind: DrawerItem.Kind)
    case wrongType(item: String, expected: String, got: DrawerValue)
    case unknownOption(item: String, String, options: [String])
    case outOfRange(item: String, Double, min: Double?, max: Double?)
    case offStep(item: String, Double, step: Double, base: Double)
    case tooLong(item: String, length: Int, limit: Int)
    case invalidDeclaration(String)
    /// A `Declare` payload above ``DrawerDeclaration/maximumDeclareBytes``.
    case declarationTooLarge(bytes: Int)
    /// A `Changed` payload above the same limit.
    case changeTooLarge(bytes: Int)

    public var description: String {
        switch self {
        case .unknownItem(let id, let known):
            "the drawer has no item \"\(id)\"" + (known.isEmpty ? " (it is empty)" : "; its items: \(known.joined(separator: ", "))")
        case .notSettable(let id, let kind):
            kind == .action ? "\"\(id)\" is an action: invoke it" : "\"\(id)\" is read-only (\(kind))"
        case .notAnAction(let id, let kind):
            "\"\(id)\" is a \(kind), not an action: set it"
        case .wrongType(let id, let expected, let got):
            "\"\(id)\" takes \(expected), not \(got.typeName) (\(got))"
        case .unknownOption(let id, let option, let options):
            "\"\(id)\" has no option \"\(option)\"; its options: \(options.joined(separator: ", "))"
        case .outOfRange(let id, let number, let min, let max):
            "\(DrawerValue.number(number)) is outside the range of \"\(id)\" (\(min.map { DrawerValue.number($0).description } ?? "…")–\(max.map { DrawerValue.number($0).description } ?? "…"))"
        case .offStep(let id, let number, let step, let base):
            "\(DrawerValue.number(number)) is not \(DrawerValue.number(base)) plus a whole number of steps of \(DrawerValue.number(step)) (\"\(id)\")"
        case .tooLong(let id, let length, let limit):
            "the text for \"\(id)\" is \(length) characters (code points), above its limit of \(limit)"
        case .invalidDeclaration(let problem):
            "the drawer declaration is not valid: \(problem)"
        case .declarationTooLarge(let bytes):
            "the drawer declaration is too large: \(bytes) bytes of JSON, above the limit of \(DrawerDeclaration.maximumDeclareBytes) (256 KiB)"
        case .changeTooLarge(let bytes):
            "the drawer change is too large: \(bytes) bytes of JSON, above the limit of \(DrawerDeclaration.maximumDeclareBytes) (256 KiB, as for a whole declaration); the value is not recorded"
        }
    }
}
