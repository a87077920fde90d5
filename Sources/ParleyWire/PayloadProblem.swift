import Foundation

/// What was wrong with a payload that did not encode or decode as JSON, as a value a caller can match. The path is
/// the coding path of the offending value (`items.2.title`); empty for the payload itself.
public enum PayloadProblem: Sendable, Hashable, CustomStringConvertible {
    /// Not JSON at all, or JSON the type rejects as a whole (a date in the wrong format, a custom check).
    case invalid(path: String, detail: String)
    /// A required key is missing.
    case missingKey(String, path: String)
    /// A value has another type than the one expected (`expected` names the JSON kind: a string, a number, …).
    case typeMismatch(expected: String, path: String)
    /// A required value is null.
    case null(expected: String, path: String)

    /// Reads what JSONEncoder or JSONDecoder threw.
    public init(_ error: any Error) {
        switch error {
        case DecodingError.dataCorrupted(let context):
            self = .invalid(path: Self.path(context.codingPath), detail: Self.detail(context))
        case DecodingError.keyNotFound(let key, let context):
            self = .missingKey(key.stringValue, path: Self.path(context.codingPath))
        case DecodingError.typeMismatch(let type, let context):
            self = .typeMismatch(expected: Self.kind(of: type), path: Self.path(context.codingPath))
        case DecodingError.valueNotFound(let type, let context):
            self = .null(expected: Self.kind(of: type), path: Self.path(context.codingPath))
        case EncodingError.invalidValue(_, let context):
            self = .invalid(path: Self.path(context.codingPath), detail: context.debugDescription)
        default:
            self = .invalid(path: "", detail: "not valid JSON")
        }
    }

    public var description: String {
        switch self {
        case .invalid(let path, let detail): detail + Self.at(path)
        case .missingKey(let key, let path): "missing key \"\(key)\"" + Self.at(path)
        case .typeMismatch(let expected, let path): "expected \(expected)" + Self.at(path)
        case .null(let expected, let path): "expected \(expected), found null" + Self.at(path)
        }
    }

    private static func at(_ path: String) -> String { path.isEmpty ? "" : " at \(path)" }

    private static func path(_ codingPath: [any CodingKey]) -> String {
        codingPath.map(\.stringValue).joined(separator: ".")
    }

    /// Plain words for a peer in any language: Foundation's own ("The given data was not valid JSON", an
    /// NSCocoaErrorDomain number) say nothing to it. A value inside the payload that its type refused keeps the
    /// reason the type wrote; at the top level Foundation on Linux reports JSON that does not parse with neither a
    /// path nor an underlying error, so a refusal there reads "not valid JSON" too.
    private static func detail(_ context: DecodingError.Context) -> String {
        context.underlyingError != nil || context.codingPath.isEmpty ? "not valid JSON" : context.debugDescription
    }

    /// The JSON kind a Swift type is read from, in words.
    private static func kind(of type: Any.Type) -> String {
        switch type {
        // Foundation's Date, URL, UUID and Data are read from strings by JSONDecoder's default strategies.
        case is String.Type, is Substring.Type, is Date.Type, is URL.Type, is UUID.Type, is Data.Type: "a string"
        case is Bool.Type: "true or false"
        case is any BinaryInteger.Type: "a whole number"
        case is any BinaryFloatingPoint.Type, is Decimal.Type: "a number"
        case is any ExpressibleByDictionaryLiteral.Type: "an object"
        case is any Collection.Type: "a list"
        default: "an object"
        }
    }
}
