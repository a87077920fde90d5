/// A violation of the wire protocol by the remote side. Each case says what arrived and what was expected,
/// so that the log line closing the connection explains itself.
public enum WireError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The first byte of a frame was not the framing's start byte (207 for Parley, 206 for the original framing).
    case unexpectedStartByte(UInt8)
    /// A frame announced a body larger than this connection accepts.
    case frameTooLarge(length: Int, maximum: Int)
    /// A frame in the original framing announced a negative Int32 length.
    case negativeLength(Int32)
    /// The connection ended in the middle of a frame.
    case truncatedFrame(expected: Int, received: Int)
    /// A Parley frame carried a kind byte this version does not know.
    case unknownFrameKind(UInt8)
    /// A Parley frame's fields did not fit its body, or a field held an impossible value.
    case malformedFrame(kind: FrameKind, reason: String)
    /// A sealed frame's tag did not verify: it was altered, forged, replayed, reordered or follows a dropped one.
    case forgedFrame
    /// A frame arrived in plaintext on a connection that had switched to sealed frames.
    case plaintextAfterSealing(kind: String)

    public var description: String {
        switch self {
        case .unexpectedStartByte(let byte):
            let hex = String(byte, radix: 16, uppercase: true)
            return "unexpected start byte 0x\(hex): a Parley frame starts with 0xCF (and a connection in the original Swift Talk debugger framing with 0xCE)"
        case .frameTooLarge(let length, let maximum):
            return "frame body of \(length) bytes exceeds the maximum of \(maximum) bytes"
        case .negativeLength(let length):
            return "original-framing frame announced a negative length (\(length))"
        case .truncatedFrame(let expected, let received):
            return "connection ended inside a frame: \(received) of \(expected) bytes received"
        case .unknownFrameKind(let kind):
            return "unknown frame kind 0x\(String(kind, radix: 16, uppercase: true))"
        case .malformedFrame(let kind, let reason):
            return "malformed \(kind) frame: \(reason)"
        case .forgedFrame:
            return "frame failed authentication: altered or forged (or replayed, reordered, or after a dropped frame)"
        case .plaintextAfterSealing(let kind):
            return "a plaintext \(kind) frame arrived after the connection switched to sealed frames"
        }
    }

    /// The code a peer is told when its connection is closed for this reason.
    public var closeCode: ErrorCode {
        switch self {
        case .frameTooLarge: .frameTooLarge
        case .forgedFrame: .authenticationFailed
        case .plaintextAfterSealing: .protocolViolation
        default: .malformedFrame
        }
    }
}
