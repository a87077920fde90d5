import NIOCore

/// The cryptographic half of an authenticated handshake. ``HandshakeStateMachine`` decides what is sent and
/// accepted when; an authenticator (ParleySecurity's `SharedSecretAuthenticator`) supplies the offer, the
/// proofs and the session keys. Kept behind this protocol so that the wire module needs no crypto library.
public protocol HandshakeAuthenticator: Sendable {
    /// What this side's hello carries: the scheme, a fresh nonce and a fresh ephemeral public key.
    var offer: Hello.AuthOffer { get }

    /// Called once, when both hellos are known: checks the peer's offer and derives this connection's proofs
    /// and keys from the transcript. Throws when the peer's offer cannot be used.
    mutating func bind(to transcript: HandshakeTranscript, as role: ConnectionRole) throws(HandshakeError)

    /// This side's proof that it knows the shared secret, over the bound transcript.
    func localProof() -> ByteBuffer

    /// Whether `proof` is the peer's proof over the bound transcript. Compares in constant time.
    func isValidPeerProof(_ proof: ByteBuffer) -> Bool

    /// The sealing state for every frame after the handshake, this side's view (its sending and receiving keys).
    func frameProtection() -> any FrameProtection
}

/// Everything both sides must agree on before they trust each other: the two hellos exactly as sent (the
/// versions, the JSON, and so both offers) and the two offers as each side read them. Proofs and keys are
/// derived from all of it, so nothing from another connection can be spliced in.
public struct HandshakeTranscript: Sendable, Hashable {
    public var dialerHello: HelloFrame
    public var acceptorHello: HelloFrame
    public var dialerOffer: Hello.AuthOffer
    public var acceptorOffer: Hello.AuthOffer

    public init(dialerHello: HelloFrame, acceptorHello: HelloFrame, dialerOffer: Hello.AuthOffer, acceptorOffer: Hello.AuthOffer) {
        self.dialerHello = dialerHello
        self.acceptorHello = acceptorHello
        self.dialerOffer = dialerOffer
        self.acceptorOffer = acceptorOffer
    }
}

/// Seals and opens the frames of one connection once its handshake has agreed keys. One value per connection;
/// it holds both directions' record counters, which every frame advances.
public protocol FrameProtection: Sendable {
    /// Wraps an outbound frame into a ``Frame/sealed(_:)`` frame. Throws only when this direction can seal no
    /// more frames (its record counter is exhausted); the connection must then end.
    mutating func seal(_ frame: Frame, allocator: ByteBufferAllocator) throws -> Frame

    /// Returns the frame carried by the body of an inbound sealed frame. Throws ``WireError/forgedFrame`` when
    /// the tag does not verify (and the frame is not opened), or a malformed-frame error for a bad inner frame.
    mutating func open(sealed body: ByteBuffer) throws(WireError) -> Frame
}
