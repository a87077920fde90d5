import NIOCore
@testable import ParleySecurity
import ParleyWire
import Testing

/// Parley's key schedule against values computed independently, from the formulas of docs/protocol.md §4.1
/// alone, by scripts/auth-test-vector.py (Python's `cryptography`). A peer in another language can check itself
/// against the same vector.
@Suite("Test vector of psk-x25519-chachapoly-v1")
struct TestVectorTests {
    static func bytes(from start: Int) -> [UInt8] { (0..<32).map { UInt8((start + $0) % 256) } }
    static func hex(_ buffer: ByteBuffer) -> String { buffer.readableBytesView.map { String(format: "%02x", $0) }.joined() }

    @Test("proofs and sealed frames match the independently computed vector")
    func vector() throws {
        let secret = try SharedSecret(bytes: Self.bytes(from: 0x00))
        var dialer = try SharedSecretAuthenticator(secret: secret, nonce: Self.bytes(from: 0x20), ephemeralPrivateKey: Self.bytes(from: 0x60))
        var acceptor = try SharedSecretAuthenticator(secret: secret, nonce: Self.bytes(from: 0x40), ephemeralPrivateKey: Self.bytes(from: 0x80))
        let transcript = HandshakeTranscript(
            dialerHello: HelloFrame(minimumVersion: 1, maximumVersion: 1, body: ByteBuffer(string: #"{"d":1}"#)),
            acceptorHello: HelloFrame(minimumVersion: 1, maximumVersion: 1, body: ByteBuffer(string: #"{"a":1}"#)),
            dialerOffer: dialer.offer, acceptorOffer: acceptor.offer
        )
        try dialer.bind(to: transcript, as: .dialer)
        try acceptor.bind(to: transcript, as: .acceptor)

        #expect(Self.hex(dialer.localProof()) == "87020a1f16300d1123bd4c2cddb6c86a5a63846e746659a87c9b37099550083a")
        #expect(Self.hex(acceptor.localProof()) == "aa1b7d0842bf0b00db1b06aa8a00ddd2c79db03b07a801f3a665dd5ac4e597c2")

        var protection = dialer.frameProtection()
        var frames: [String] = []
        for _ in 0..<2 {
            var wire = ByteBuffer()
            try protection.seal(.ping(1), allocator: ByteBufferAllocator()).write(to: &wire)
            frames.append(Self.hex(wire))
        }
        #expect(frames == [
            "cf1a00000003a1301fc69a35a1c87582f8cb907dc223a10688a341185dd46f",
            "cf1a0000000340ccfaae32d2fc21def8c8636d89c28986b1f100a01d2a5982",
        ])
    }
}
