import NIOCore

/// Standard base64 (RFC 4648 §4, alphabet `A–Z a–z 0–9 + /`), used where screenshots travel inside JSON: the
/// original debugger's `imageData` and the history export format.
public enum Base64 {
    /// Padded base64 of the readable bytes of `bytes`.
    public static func encode(_ bytes: ByteBuffer) -> String {
        var output = ByteBuffer()
        encode(bytes, into: &output)
        return String(buffer: output)
    }

    /// Appends the padded base64 of the readable bytes of `bytes` to `output`.
    public static func encode(_ bytes: ByteBuffer, into output: inout ByteBuffer) {
        let encodedCount = (bytes.readableBytes + 2) / 3 * 4
        output.reserveCapacity(minimumWritableBytes: encodedCount)
        bytes.withUnsafeReadableBytes { input in
            _ = output.writeWithUnsafeMutableBytes(minimumWritableBytes: encodedCount) { target in
                var out = 0
                var index = 0
                while index + 3 <= input.count {
                    let chunk = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8 | UInt32(input[index + 2])
                    target[out] = alphabet[Int(chunk >> 18)]
                    target[out + 1] = alphabet[Int(chunk >> 12 & 0x3F)]
                    target[out + 2] = alphabet[Int(chunk >> 6 & 0x3F)]
                    target[out + 3] = alphabet[Int(chunk & 0x3F)]
                    index += 3
                    out += 4
                }
                let rest = input.count - index
                if rest > 0 {
                    let chunk = UInt32(input[index]) << 16 | (rest == 2 ? UInt32(input[index + 1]) << 8 : 0)
                    target[out] = alphabet[Int(chunk >> 18)]
                    target[out + 1] = alphabet[Int(chunk >> 12 & 0x3F)]
                    target[out + 2] = rest == 2 ? alphabet[Int(chunk >> 6 & 0x3F)] : UInt8(ascii: "=")
                    target[out + 3] = UInt8(ascii: "=")
                    out += 4
                }
                return out
            }
        }
    }

    /// Decodes base64 text. Padding may be present (as `Data.base64EncodedString()` writes it) or left out;
    /// anything else outside the alphabet, including whitespace and line breaks, is an error.
    public static func decode(_ text: String) throws(Base64Error) -> ByteBuffer {
        var text = text
        let outcome: Result<ByteBuffer, Base64Error> = text.withUTF8 { input in
            Result { () throws(Base64Error) -> ByteBuffer in try decode(input) }
        }
        return try outcome.get()
    }

    static func decode(_ input: UnsafeBufferPointer<UInt8>) throws(Base64Error) -> ByteBuffer {
        var end = input.count
        var padding = 0
        while end > 0, input[end - 1] == UInt8(ascii: "="), padding < 2 {
            end -= 1
            padding += 1
        }
        if padding > 0, input.count % 4 != 0 { throw .badPadding }
        if end % 4 == 1 { throw .badLength(input.count) }
        var output = ByteBuffer()
        output.reserveCapacity(end / 4 * 3 + 2)
        var error: Base64Error?
        output.writeWithUnsafeMutableBytes(minimumWritableBytes: end / 4 * 3 + 2) { target in
            var out = 0
            var accumulator: UInt32 = 0
            var bits = 0
            for index in 0..<end {
                let value = decodingTable[Int(input[index])]
                guard value != 0xFF else {
                    error = .invalidCharacter(offset: index, byte: input[index])
                    return 0
                }
                accumulator = accumulator << 6 | UInt32(value)
                bits += 6
                if bits >= 8 {
                    bits -= 8
                    target[out] = UInt8(truncatingIfNeeded: accumulator >> UInt32(bits))
                    out += 1
                }
            }
            // Leftover bits must be zero, or the text is not what any encoder writes.
            if bits > 0, accumulator & ((1 << UInt32(bits)) - 1) != 0 { error = .badPadding }
            return out
        }
        if let error { throw error }
        return output
    }

    private static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    private static let decodingTable: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (value, character) in alphabet.enumerated() { table[Int(character)] = UInt8(value) }
        return table
    }()
}

/// Why text is not base64.
public enum Base64Error: Error, Sendable, Hashable, CustomStringConvertible {
    /// A character outside `A–Z a–z 0–9 + /` (or `=` in the middle).
    case invalidCharacter(offset: Int, byte: UInt8)
    /// A length no base64 text has (4n + 1 characters).
    case badLength(Int)
    /// `=` where padding cannot be, or non-zero bits in the last character.
    case badPadding

    public var description: String {
        switch self {
        case .invalidCharacter(let offset, let byte):
            "not base64: character \(offset) is byte 0x\(String(byte, radix: 16, uppercase: true)), outside A–Z a–z 0–9 + /"
        case .badLength(let count): "not base64: \(count) characters cannot encode whole bytes"
        case .badPadding: "not base64: the '=' padding or the last character is wrong"
        }
    }
}
