// swift-crypto 3.12 predates Sendable annotations; its keys are immutable values over copy-on-write storage,
// which 4.x declares Sendable.
@preconcurrency import Crypto
import Foundation
import NIOCore
import ParleyWire

/// Authenticates a handshake with a ``SharedSecret`` and agrees the keys that then seal every frame: scheme
/// `psk-x25519-chachapoly-v1` (see ``KeySchedule``). One per connection: its nonce and ephemeral key are fresh.
public struct SharedSecretAuthenticator: HandshakeAuthenticator {
    public static let scheme = KeySchedule.scheme
    static let nonceSize = 32

    private let secret: SharedSecret
    private let nonce: [UInt8]
    private let ephemeralKey: Curve25519.KeyAgreement.PrivateKey
    public let offer: Hello.AuthOffer
    private var schedule: KeySchedule?
    private var role: ConnectionRole = .dialer

    public init(secret: SharedSecret) {
        var generator = SystemRandomNumberGenerator()
        let nonce = (0..<Self.nonceSize).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        self.init(secret: secret, nonce: nonce, ephemeralKey: Curve25519.KeyAgreement.PrivateKey())
    }

    /// Fixed nonce and ephemeral key: for the test vector only. Reusing either would void the guarantees.
    init(secret: SharedSecret, nonce: [UInt8], ephemeralPrivateKey: [UInt8]) throws {
        self.init(secret: secret, nonce: nonce, ephemeralKey: try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: ephemeralPrivateKey))
    }

    private init(secret: SharedSecret, nonce: [UInt8], ephemeralKey: Curve25519.KeyAgreement.PrivateKey) {
        self.secret = secret
        self.nonce = nonce
        self.ephemeralKey = ephemeralKey
        offer = Hello.AuthOffer(
            scheme: Self.scheme,
            nonce: Data(nonce).base64EncodedString(),
            key: ephemeralKey.publicKey.rawRepresentation.base64EncodedString()
        )
    }

    public mutating func bind(to transcript: HandshakeTranscript, as role: ConnectionRole) throws(HandshakeError) {
        let peerOffer = role == .dialer ? transcript.acceptorOffer : transcript.dialerOffer
        guard peerOffer.scheme == Self.scheme else {
            throw .malformedHello("the peer authenticates with scheme \"\(peerOffer.scheme.prefix(64))\"; this node speaks \(Self.scheme)")
        }
        guard let peerNonce = Data(base64Encoded: peerOffer.nonce), peerNonce.count == Self.nonceSize else {
            throw .malformedHello("auth.nonce is not the base64 of \(Self.nonceSize) bytes")
        }
        guard let peerKeyBytes = Data(base64Encoded: peerOffer.key),
            let peerKey = try? Curve25519.KeyAgreement.PublicKey(rawRepresentation: peerKeyBytes)
        else {
            throw .malformedHello("auth.key is not the base64 of a 32-byte X25519 public key")
        }
        guard let agreement = try? ephemeralKey.sharedSecretFromKeyAgreement(with: peerKey),
            agreement.withUnsafeBytes({ $0.contains { $0 != 0 } })
        else {
            // RFC 7748 §6.1: an all-zero output means a low-order point was sent; it would give no forward secrecy.
            throw .malformedHello("auth.key is a low-order X25519 point")
        }
        let local = (nonce: nonce, key: Array(ephemeralKey.publicKey.rawRepresentation))
        let remote = (nonce: Array(peerNonce), key: Array(peerKeyBytes))
        let (dialer, acceptor) = role == .dialer ? (local, remote) : (remote, local)
        let hash = KeySchedule.transcriptHash(
            transcript, dialerNonce: dialer.nonce, acceptorNonce: acceptor.nonce, dialerKey: dialer.key, acceptorKey: acceptor.key
        )
        self.role = role
        schedule = KeySchedule(secret: secret, keyAgreement: agreement, transcriptHash: hash)
    }

    public func localProof() -> ByteBuffer {
        ByteBuffer(bytes: boundSchedule.proof(of: role))
    }

    public func isValidPeerProof(_ proof: ByteBuffer) -> Bool {
        boundSchedule.isValid(Array(proof.readableBytesView), of: role.peer)
    }

    public func frameProtection() -> any FrameProtection {
        ChaChaPolyFrameProtection(
            sending: boundSchedule.trafficKey(sentBy: role), receiving: boundSchedule.trafficKey(sentBy: role.peer)
        )
    }

    private var boundSchedule: KeySchedule {
        guard let schedule else { preconditionFailure("the authenticator is used before bind(to:as:)") }
        return schedule
    }
}
