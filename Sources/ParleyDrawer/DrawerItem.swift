/// One control of an app's debug drawer, as declared on the wire (docs/drawer.md).
public struct DrawerItem: Codable, Sendable, Hashable {
    public enum Kind: String, Codable, Sendable, Hashable, CaseIterable {
        case toggle, choice, text, number, action, info
    }

    public struct Option: Codable, Sendable, Hashable {
        public var id: String
        public var label: String
        public init(id: String, label: String) {
            self.id = id
            self.label = label
        }
    }

    public var id: String
    public var label: String
    public var kind: Kind
    /// Absent for actions.
    public var value: DrawerValue?
    /// Choices only.
    public var options: [Option]?
    /// Numbers only, each optional.
    public var min: Double?
    public var max: Double?
    public var step: Double?
    /// Texts only; ``DrawerDeclaration/defaultMaxTextLength`` when absent.
    public var maxLength: Int?
    /// parleyd keeps the last value set from outside for this app name and item.
    public var remember: Bool?
    public var section: String?
    /// Actions only: the action cannot be undone (it deletes, resets, sends), so a person is asked before it runs.
    public var destructive: Bool?

    public init(
        id: String, label: String, kind: Kind, value: DrawerValue? = nil, options: [Option]? = nil, min: Double? = nil,
        max: Double? = nil, step: Double? = nil, maxLength: Int? = nil, remember: Bool? = nil, section: String? = nil,
        destructive: Bool? = nil
    ) {
        self.id = id
        self.label = label
        self.kind = kind
        self.value = value
        self.options = options
        self.min = min
        self.max = max
        self.step = step
        self.maxLength = maxLength
        self.remember = remember
        self.section = section
        self.destructive = destructive
    }

    /// Whether a value can be set from outside (actions are invoked; info is read-only).
    public var isSettable: Bool { kind != .action && kind != .info }
}

/// A drawer value as JSON carries it: a boolean (toggles), a number, or a string (texts, choices' option ids, info).
public enum DrawerValue: Codable, Sendable, Hashable, CustomStringConvertible {
    case bool(Bool)
    case number(Double)
    case string(String)

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let bool = try? container.decode(Bool.self) {
            self = .bool(bool)
        } else if let number = try? container.decode(Double.self) {
            self = .number(number)
        } else if let string = try? container.decode(String.self) {
            self = .string(string)
        } else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "a drawer value is a boolean, a number or a string")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .bool(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        }
    }

    /// As JSON writes it: `true`, `3`, `2.5`, `"dark"`.
    public var description: String {
        switch self {
        case .bool(let value): String(value)
        case .number(let value): value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
        case .string(let value): "\"\(value)\""
        }
    }

    /// What type of JSON value this is, for error messages.
    var typeName: String {
        switch self {
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        }
    }
}
