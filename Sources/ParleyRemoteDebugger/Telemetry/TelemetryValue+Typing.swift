import ParleyTelemetry

extension TelemetryValue {
    /// A value handed over as "something with a description" (swift-log's `stringConvertible` metadata,
    /// swift-distributed-tracing's `stringConvertible` attributes) with its type kept when it is a number or a
    /// boolean, so that parleyd can compare it as one; anything else is its description.
    public init(typing value: any CustomStringConvertible & Sendable) {
        switch value {
        case let value as Bool: self = .bool(value)
        case let value as Int: self = .int(Int64(value))
        case let value as Int64: self = .int(value)
        case let value as Int32: self = .int(Int64(value))
        case let value as UInt32: self = .int(Int64(value))
        case let value as UInt64 where value <= UInt64(Int64.max): self = .int(Int64(value))
        case let value as UInt where value <= UInt(Int64.max): self = .int(Int64(value))
        case let value as Double: self = .double(value)
        case let value as Float: self = .double(Double(value))
        default: self = .string(value.description)
        }
    }
}
