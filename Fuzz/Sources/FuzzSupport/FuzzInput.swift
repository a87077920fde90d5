/// A fuzzer's input read front to back as a series of choices, then the bytes that remain. Reading past the end
/// yields zeros, so every input, however short, is a valid set of choices.
public struct FuzzInput {
    private let bytes: [UInt8]
    private var offset = 0

    public init(_ data: UnsafePointer<UInt8>?, count: Int) {
        bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: count)) } ?? []
    }

    public init(_ bytes: [UInt8]) { self.bytes = bytes }

    public mutating func byte() -> UInt8 {
        guard offset < bytes.count else { return 0 }
        defer { offset += 1 }
        return bytes[offset]
    }

    public mutating func uint16() -> UInt16 {
        UInt16(byte()) | UInt16(byte()) << 8
    }

    /// Everything not yet read.
    public mutating func rest() -> [UInt8] {
        defer { offset = bytes.count }
        return offset < bytes.count ? Array(bytes[offset...]) : []
    }
}

/// Stops the run with `message` when a property the fuzzer checks does not hold: libFuzzer sees the trap,
/// reports it as a crash and saves the input.
public func check(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String) {
    if !condition() { fatalError("fuzz property violated: \(message())") }
}
