// swift-crypto 3.12 predates Sendable annotations; its keys are immutable values over copy-on-write storage,
// which 4.x declares Sendable.
@preconcurrency import Crypto
import Foundation
import NIOCore
import NIOFoundationCompat
import ParleyWire

/// Seals frames with ChaCha20-Poly1305 (RFC 8439), one key per direction. As in TLS 1.3 each frame's nonce is
/// the direction's IV XOR its 64-bit record counter, never sent: a frame replayed, reordered or following a
/// dropped one is opened with the wrong nonce and fails like a forged one. The associated data is the sealed
/// frame's own header (start byte, length, kind), so the length cannot be altered either.
///
/// Sealed frame body: ciphertext of the inner frame's body (its kind byte and fields), then the 16-byte tag.
struct ChaChaPolyFrameProtection: FrameProtection {
    static let tagSize = 16

    private var sending: Direction
    private var receiving: Direction

    init(sending: TrafficKey, receiving: TrafficKey) {
        self.sending = Direction(sending)
        self.receiving = Direction(receiving)
    }

    mutating func seal(_ frame: Frame, allocator: ByteBufferAllocator) throws -> Frame {
        var inner = allocator.buffer(capacity: FrameLayout.prefixSize + frame.bodySize)
        frame.write(to: &inner)
        inner.moveReaderIndex(forwardBy: FrameLayout.prefixSize)
        let nonce = try sending.nextNonce()
        let header = Self.header(sealedBodySize: 1 + inner.readableBytes + Self.tagSize)
        let box = try ChaChaPoly.seal(inner.readableBytesView, using: sending.key, nonce: nonce, authenticating: header)
        var body = allocator.buffer(capacity: inner.readableBytes + Self.tagSize)
        body.writeBytes(box.ciphertext)
        body.writeBytes(box.tag)
        return .sealed(body)
    }

    mutating func open(sealed body: ByteBuffer) throws(WireError) -> Frame {
        guard body.readableBytes >= FrameLayout.sealedOverhead else {
            throw .malformedFrame(kind: .sealed, reason: "body shorter than an inner kind byte and the 16-byte tag")
        }
        guard let nonce = try? receiving.nextNonce() else { throw .forgedFrame }
        let header = Self.header(sealedBodySize: 1 + body.readableBytes)
        let view = body.readableBytesView
        let tagStart = view.index(view.endIndex, offsetBy: -Self.tagSize)
        let plaintext: Data
        do {
            let box = try ChaChaPoly.SealedBox(nonce: nonce, ciphertext: view[..<tagStart], tag: view[tagStart...])
            plaintext = try ChaChaPoly.open(box, using: receiving.key, authenticating: header)
        } catch {
            throw .forgedFrame
        }
        let inner = try Frame.parse(body: ByteBuffer(data: plaintext))
        if case .sealed = inner { throw .malformedFrame(kind: .sealed, reason: "a sealed frame inside a sealed frame") }
        return inner
    }

    /// The 6 bytes in front of a sealed frame's ciphertext: start byte, body length (LE), kind.
    static func header(sealedBodySize: Int) -> [UInt8] {
        let length = UInt32(truncatingIfNeeded: sealedBodySize).littleEndian
        return [StartByte.parley.rawValue] + withUnsafeBytes(of: length, Array.init) + [FrameKind.sealed.rawValue]
    }

    private struct Direction: Sendable {
        let key: SymmetricKey
        let iv: [UInt8]
        var counter: UInt64 = 0

        init(_ traffic: TrafficKey) {
            key = traffic.key
            iv = traffic.iv
        }

        /// IV XOR the big-endian counter in its last 8 bytes; then the counter moves on. A nonce is never reused:
        /// after 2^64 − 1 frames this direction can seal or open no more.
        mutating func nextNonce() throws -> ChaChaPoly.Nonce {
            guard counter < .max else { throw FrameProtectionError.recordCounterExhausted }
            var bytes = iv
            withUnsafeBytes(of: counter.bigEndian) { counterBytes in
                for (offset, byte) in counterBytes.enumerated() { bytes[4 + offset] ^= byte }
            }
            counter += 1
            return try ChaChaPoly.Nonce(data: bytes)
        }
    }
}

/// Sealing cannot go on.
enum FrameProtectionError: Error, CustomStringConvertible {
    case recordCounterExhausted

    var description: String {
        "this connection has sealed 2^64 − 1 frames in one direction, the most one key may protect; reconnect"
    }
}
