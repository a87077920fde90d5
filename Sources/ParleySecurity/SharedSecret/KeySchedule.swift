// swift-crypto 3.12 predates Sendable annotations; its keys are immutable values over copy-on-write storage,
// which 4.x declares Sendable.
@preconcurrency import Crypto
import Foundation
import NIOCore
import ParleyWire

/// The key schedule of scheme `psk-x25519-chachapoly-v1`, in the manner of TLS 1.3's PSK-DHE handshake, from
/// the shared secret `K`, the X25519 output `dh` of the two ephemeral keys and the handshake transcript:
///
/// ```
/// h          = SHA-256("parley psk-x25519-chachapoly-v1" ‖ dialer hello ‖ acceptor hello ‖ n_d ‖ n_a ‖ e_d ‖ e_a)
/// proof(r)   = HMAC-SHA256(K, "parley proof " ‖ r ‖ h)                   r: "dialer" or "acceptor"
/// prk        = HKDF-Extract(salt: K, ikm: dh)
/// key(r), iv(r) = HKDF-Expand(prk, "parley key sent by " ‖ r ‖ h, 32), HKDF-Expand(prk, "parley iv sent by " ‖ r ‖ h, 12)
/// ```
///
/// The hellos are whole frames as sent (prefix included), so the byte strings cannot be re-cut; `n` are the
/// nonces and `e` the ephemeral public keys as each side read them from the offers.
struct KeySchedule: Sendable {
    static let scheme = "psk-x25519-chachapoly-v1"

    let transcriptHash: [UInt8]
    private let secret: SymmetricKey
    private let pseudoRandomKey: HashedAuthenticationCode<SHA256>

    init(secret: SharedSecret, keyAgreement: some ContiguousBytes, transcriptHash: [UInt8]) {
        self.secret = secret.key
        self.transcriptHash = transcriptHash
        pseudoRandomKey = HKDF<SHA256>.extract(inputKeyMaterial: SymmetricKey(data: keyAgreement), salt: secret.key.bytes)
    }

    /// `h`, from the transcript and the decoded offers.
    static func transcriptHash(
        _ transcript: HandshakeTranscript,
        dialerNonce: [UInt8], acceptorNonce: [UInt8], dialerKey: [UInt8], acceptorKey: [UInt8]
    ) -> [UInt8] {
        var hash = SHA256()
        hash.update(data: Array("parley \(scheme)".utf8))
        for hello in [transcript.dialerHello, transcript.acceptorHello] {
            var bytes = ByteBuffer()
            Frame.hello(hello).write(to: &bytes)
            hash.update(data: bytes.readableBytesView)
        }
        for part in [dialerNonce, acceptorNonce, dialerKey, acceptorKey] { hash.update(data: part) }
        return Array(hash.finalize())
    }

    /// The proof that the side playing `role` knows `K`.
    func proof(of role: ConnectionRole) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: Self.label("parley proof ", role) + transcriptHash, using: secret))
    }

    /// Whether `proof` is the proof of the side playing `role`; compares in constant time.
    func isValid(_ proof: [UInt8], of role: ConnectionRole) -> Bool {
        HMAC<SHA256>.isValidAuthenticationCode(proof, authenticating: Self.label("parley proof ", role) + transcriptHash, using: secret)
    }

    /// The key and IV protecting the frames the side playing `role` sends.
    func trafficKey(sentBy role: ConnectionRole) -> TrafficKey {
        let key = HKDF<SHA256>.expand(
            pseudoRandomKey: pseudoRandomKey, info: Self.label("parley key sent by ", role) + transcriptHash, outputByteCount: 32
        )
        let iv = HKDF<SHA256>.expand(
            pseudoRandomKey: pseudoRandomKey, info: Self.label("parley iv sent by ", role) + transcriptHash, outputByteCount: 12
        )
        return TrafficKey(key: key, iv: iv.bytes)
    }

    private static func label(_ prefix: String, _ role: ConnectionRole) -> [UInt8] {
        Array((prefix + (role == .dialer ? "dialer" : "acceptor")).utf8)
    }
}

/// One direction's AEAD key and the IV its record nonces are made from.
struct TrafficKey: Sendable {
    var key: SymmetricKey
    var iv: [UInt8]
}

extension SymmetricKey {
    var bytes: [UInt8] { withUnsafeBytes { Array($0) } }
}

extension ConnectionRole {
    var peer: ConnectionRole { self == .dialer ? .acceptor : .dialer }
}
