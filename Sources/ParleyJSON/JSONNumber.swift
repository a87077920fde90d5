/// A JSON number kept as the literal the document spelled (`1.10`, `1e400`, `-0`,
/// `12345678901234567890123`), so that reading a state never rounds it.
///
/// Two numbers are equal when they denote the same decimal value, whatever their spelling: `1`, `1.0` and `10e-1`
/// are equal; `0.1` and `0.10000000000000001` are not (they differ as decimals even though they are the same
/// `Double`). This is what the differ uses to decide whether a number changed.
public struct JSONNumber: Sendable, Hashable, CustomStringConvertible, ExpressibleByIntegerLiteral {
    /// The literal, exactly as written in the document.
    public let text: String

    /// A number from a JSON number literal; nil if `text` is not one (RFC 8259 §6: no `+`, no leading zeros,
    /// no `.5` or `1.`, no `NaN`).
    public init?(_ text: String) {
        var utf8 = Array(text.utf8)
        let valid = utf8.withUnsafeMutableBufferPointer { buffer -> Bool in
            guard !buffer.isEmpty else { return false }
            var scanner = JSONScanner(UnsafeBufferPointer(buffer))
            guard buffer[0] == UInt8(ascii: "-") || isDigit(buffer[0]) else { return false }
            do {
                try scanner.scanNumber()
                return scanner.position == buffer.count
            } catch {
                return false
            }
        }
        guard valid else { return nil }
        self.text = text
    }

    init(validated text: String) {
        self.text = text
    }

    public init(_ value: Int) {
        self.text = String(value)
    }

    public init(integerLiteral value: Int) {
        self.init(value)
    }

    /// The nearest `Double`, or nil when the number is beyond `Double`'s range (such as `1e400`).
    public var double: Double? {
        guard let value = Double(text), value.isFinite else { return nil }
        return value
    }

    /// The value as an `Int` when the literal is a plain integer that fits.
    public var int: Int? { Int(text) }

    public var description: String { text }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.text == rhs.text || CanonicalDecimal(lhs.text.utf8) == CanonicalDecimal(rhs.text.utf8)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(CanonicalDecimal(text.utf8))
    }
}

/// A validated number literal reduced to sign, significant digits without leading or trailing zeros, and a
/// base-10 exponent: equal values, whatever their spelling, reduce to equal forms.
///
/// Exponents saturate at about ±4.6e18; two numbers both beyond that compare by their digits only, a limit no
/// real state reaches.
private enum NumberPart { case integer, fraction, exponent }

struct CanonicalDecimal: Hashable {
    var negative: Bool
    var digits: [UInt8]
    var exponent: Int

    init(_ literal: some Sequence<UInt8>) {
        var negative = false
        var digits: [UInt8] = []
        var fractionDigits = 0
        var exponent = 0
        var exponentNegative = false
        var part = NumberPart.integer
        for byte in literal {
            switch byte {
            case UInt8(ascii: "-") where part == .integer: negative = true
            case UInt8(ascii: "-"): exponentNegative = true
            case UInt8(ascii: "+"): break
            case UInt8(ascii: "."): part = .fraction
            case UInt8(ascii: "e"), UInt8(ascii: "E"): part = .exponent
            default:
                let digit = byte &- UInt8(ascii: "0")
                switch part {
                case .integer:
                    if !(digits.isEmpty && digit == 0) { digits.append(digit) }
                case .fraction:
                    if !(digits.isEmpty && digit == 0) { digits.append(digit) }
                    fractionDigits += 1
                case .exponent:
                    if exponent < Int.max / 20 { exponent = exponent * 10 + Int(digit) }
                }
            }
        }
        var scale = (exponentNegative ? -exponent : exponent) - fractionDigits
        while let last = digits.last, last == 0 {
            digits.removeLast()
            scale += 1
        }
        if digits.isEmpty {
            // Every zero (0, -0, 0.000e5) is the same value.
            self.negative = false
            self.digits = []
            self.exponent = 0
        } else {
            self.negative = negative
            self.digits = digits
            self.exponent = scale
        }
    }
}
