import ParleyJSON

/// A value of a log record's metadata or a span's attributes, as OpenTelemetry's `AnyValue` holds it.
///
/// On the wire it is plain JSON: a string, a boolean, a number (an integer when it has no fraction or exponent),
/// an array, or an object. `null` is refused: OpenTelemetry has no null attribute, and swift-log metadata cannot
/// hold one.
public enum TelemetryValue: Sendable, Hashable {
    case string(String)
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case array([TelemetryValue])
    case map([String: TelemetryValue])
}

extension TelemetryValue: Codable {
    public init(from decoder: any Decoder) throws {
        if let tree = decoder as? any JSONTreeDecoder {
            self = try TelemetryValue(tree.value, at: tree.codingPath)
            return
        }
        let container = try decoder.singleValueContainer()
        if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .int(value)
        } else if let value = try? container.decode(Double.self) {
            self = .double(value)
        } else if let value = try? container.decode([TelemetryValue].self) {
            self = .array(value)
        } else if let value = try? container.decode([String: TelemetryValue].self) {
            self = .map(value)
        } else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: Self.notNull)
        }
    }

    /// The value a parsed tree holds, or nil where the decoder above refuses it: what `LogRecord(reading:)` reads
    /// metadata with.
    init?(reading value: JSONValue) {
        guard let read = try? TelemetryValue(value) else { return nil }
        self = read
    }

    /// The value a parsed tree holds: what the decoder above finds by trying one type after another, read from
    /// the JSON at once.
    private init(_ value: JSONValue, at path: [any CodingKey]) throws {
        do {
            self = try TelemetryValue(value)
        } catch {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(codingPath: path + error.innermostFirst.reversed(), debugDescription: error.problem))
        }
    }

    private init(_ value: JSONValue) throws(TreeProblem) {
        switch value {
        case .string(let text): self = .string(text)
        case .bool(let flag): self = .bool(flag)
        case .number(let number):
            if let integer = Int64(number.text) {
                self = .int(integer)
            } else if let double = number.double {
                self = .double(double)
            } else {
                throw TreeProblem(problem: "the number \(number.text) is out of range")
            }
        case .array(let elements):
            var values: [TelemetryValue] = []
            values.reserveCapacity(elements.count)
            for (index, element) in elements.enumerated() {
                do { values.append(try TelemetryValue(element)) } catch { throw error.inside(IndexKey(intValue: index)) }
            }
            self = .array(values)
        case .object(let members):
            var map: [String: TelemetryValue] = [:]
            map.reserveCapacity(members.count)
            for member in members {
                do { map[member.key] = try TelemetryValue(member.value) } catch { throw error.inside(IndexKey(stringValue: member.key)) }
            }
            self = .map(map)
        case .null: throw TreeProblem(problem: Self.notNull)
        }
    }

    /// What is wrong inside a tree, and where: the keys are gathered on the way out, innermost first.
    private struct TreeProblem: Error {
        var problem: String
        var innermostFirst: [IndexKey] = []

        func inside(_ key: IndexKey) -> TreeProblem {
            var outer = self
            outer.innermostFirst.append(key)
            return outer
        }
    }

    private static let notNull = "an attribute value is a string, a boolean, a number, an array or an object (not null)"

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let value): try container.encode(value)
        case .bool(let value): try container.encode(value)
        case .int(let value): try container.encode(value)
        // JSON has no NaN or infinity; OpenTelemetry's JSON mapping writes them as strings, and so does this.
        case .double(let value) where !value.isFinite: try container.encode(String(describing: value))
        case .double(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .map(let value): try container.encode(value)
        }
    }
}

extension TelemetryValue: CustomStringConvertible {
    /// The value as a person reads it: a string bare, anything else as compact JSON-like text.
    public var description: String {
        switch self {
        case .string(let value): value
        case .bool(let value): String(value)
        case .int(let value): String(value)
        case .double(let value): String(value)
        case .array(let values): "[" + values.map(\.quotedDescription).joined(separator: ", ") + "]"
        case .map(let values):
            "{" + values.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value.quotedDescription)" }.joined(separator: ", ") + "}"
        }
    }

    private var quotedDescription: String {
        if case .string(let value) = self { return "\"\(value)\"" }
        return description
    }
}

/// A member name or an index in the coding path of an error inside an attribute value.
private struct IndexKey: CodingKey {
    let stringValue: String
    let intValue: Int?

    init(stringValue: String) {
        self.stringValue = stringValue
        intValue = nil
    }

    init(intValue: Int) {
        stringValue = "Index \(intValue)"
        self.intValue = intValue
    }
}

/// Metadata and attributes: keys to values.
public typealias TelemetryAttributes = [String: TelemetryValue]
