import Foundation

/// Nanoseconds since 1970-01-01 UTC, OpenTelemetry's `time_unix_nano`.
///
/// On the wire a JSON number, or a decimal string as OTLP's JSON mapping writes 64-bit integers (a JavaScript
/// number loses nanoseconds past 2^53); both are read, a number is written.
public struct UnixNanos: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    public var value: UInt64

    public init(_ value: UInt64) { self.value = value }

    public init(_ date: Date) {
        let seconds = date.timeIntervalSince1970
        value = seconds <= 0 ? 0 : UInt64(min(seconds * 1e9, Double(UInt64.max / 2)))
    }

    public static var now: UnixNanos { UnixNanos(Date()) }

    public var date: Date { Date(timeIntervalSince1970: Double(value) / 1e9) }
    /// Whole milliseconds, as parleyd's history stores the states' times.
    public var milliseconds: Int64 { Int64(value / 1_000_000) }

    public static func < (lhs: UnixNanos, rhs: UnixNanos) -> Bool { lhs.value < rhs.value }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let number = try? container.decode(UInt64.self) {
            value = number
        } else if let text = try? container.decode(String.self), let number = UInt64(text) {
            value = number
        } else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "a time is nanoseconds since 1970 as a non-negative integer (a number or a decimal string)")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(value)
    }

    public var description: String { String(value) }
}
