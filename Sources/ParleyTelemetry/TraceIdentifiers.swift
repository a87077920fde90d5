/// A trace's id: 16 bytes, written as 32 lowercase hexadecimal digits (W3C Trace Context, OpenTelemetry). All
/// zeros is not a valid id.
public struct TraceID: Sendable, Hashable, Codable, CustomStringConvertible {
    public let hex: String

    /// Nil unless `hex` is 32 hexadecimal digits, not all zero (upper case is accepted and lowered).
    public init?(hex: String) {
        guard let valid = validHex(hex, digits: 32) else { return nil }
        self.hex = valid
    }

    public init(bytes: (UInt64, UInt64)) {
        hex = hexDigits(bytes.0, 16) + hexDigits(bytes.1, 16)
    }

    /// A random id (at least one bit set, which a random 128-bit value all but always has).
    public static func random() -> TraceID {
        var high = UInt64.random(in: .min ... .max)
        let low = UInt64.random(in: .min ... .max)
        if high == 0 && low == 0 { high = 1 }
        return TraceID(bytes: (high, low))
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let id = TraceID(hex: text) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "a trace id is 32 hexadecimal digits, not all zero")
        }
        self = id
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(hex)
    }

    public var description: String { hex }
}

/// A span's id: 8 bytes, written as 16 lowercase hexadecimal digits. All zeros is not a valid id.
public struct SpanID: Sendable, Hashable, Codable, CustomStringConvertible {
    public let hex: String

    public init?(hex: String) {
        guard let valid = validHex(hex, digits: 16) else { return nil }
        self.hex = valid
    }

    public init(value: UInt64) {
        hex = hexDigits(value == 0 ? 1 : value, 16)
    }

    public static func random() -> SpanID {
        SpanID(value: UInt64.random(in: 1 ... .max))
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let id = SpanID(hex: text) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "a span id is 16 hexadecimal digits, not all zero")
        }
        self = id
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(hex)
    }

    public var description: String { hex }
}

private func validHex(_ text: String, digits: Int) -> String? {
    let utf8 = text.utf8
    guard utf8.count == digits else { return nil }
    var allZero = true
    for byte in utf8 {
        switch byte {
        case UInt8(ascii: "0"): continue
        case UInt8(ascii: "1")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"), UInt8(ascii: "A")...UInt8(ascii: "F"): allZero = false
        default: return nil
        }
    }
    return allZero ? nil : text.lowercased()
}

private func hexDigits(_ value: UInt64, _ digits: Int) -> String {
    let text = String(value, radix: 16)
    return String(repeating: "0", count: max(0, digits - text.count)) + text
}
