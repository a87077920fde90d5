import Foundation
import ParleyJSON

/// A value as one layer gave it, before validation: JSON from the config file, text from the environment or
/// the command line.
enum ConfigurationValue: Sendable, Equatable, Decodable, CustomStringConvertible {
    case string(String)
    case integer(Int)
    case number(Double)
    case bool(Bool)
    case list([ConfigurationValue])
    case object([String: ConfigurationValue])
    case null

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int.self) {
            self = .integer(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([ConfigurationValue].self) {
            self = .list(value)
        } else {
            self = .object(try container.decode([String: ConfigurationValue].self))
        }
    }

    /// The value as JSON text (for values that are decoded further, such as action filters).
    var jsonText: String {
        switch self {
        case .string(let text):
            ReadableJSON.quoted(text)
        case .integer(let value): String(value)
        case .number(let value): String(value)
        case .bool(let value): String(value)
        case .list(let values): "[" + values.map(\.jsonText).joined(separator: ",") + "]"
        case .object(let members):
            "{" + members.keys.sorted().map { ConfigurationValue.string($0).jsonText + ":" + members[$0]!.jsonText }.joined(separator: ",") + "}"
        case .null: "null"
        }
    }

    /// As it would be written in JSON: strings quoted, so that an error shows exactly what was given.
    var description: String {
        switch self {
        case .string(let text): "\"\(text)\""
        case .integer(let value): String(value)
        case .number(let value): String(value)
        case .bool(let value): String(value)
        case .list(let values): "[" + values.map(\.description).joined(separator: ", ") + "]"
        case .object: jsonText
        case .null: "null"
        }
    }
}
