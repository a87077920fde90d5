import Foundation
import NIOCore
import ParleySecurity
import ParleyWire
import Testing

/// The key schedule and the sealing of scheme psk-x25519-chachapoly-v1, through the public authenticator: what
/// both sides derive must agree, and any change to the inputs or the frames must be caught.
@Suite("Key schedule and sealing")
struct KeyScheduleTests {
    static let secret = SharedSecret.generate()

    static func transcript(_ dialer: SharedSecretAuthenticator, _ acceptor: SharedSecretAuthenticator, acceptorHello: String = "a")
        -> HandshakeTranscript
    {
        HandshakeTranscript(
            dialerHello: HelloFrame(minimumVersion: 1, maximumVersion: 1, body: ByteBuffer(string: "d")),
            acceptorHello: HelloFrame(minimumVersion: 1, maximumVersion: 1, body: ByteBuffer(string: acceptorHello)),
            dialerOffer: dialer.offer, acceptorOffer: acceptor.offer
        )
    }

    /// A dialer and an acceptor bound to the same transcript.
    static func pair(
        dialerSecret: SharedSecret = secret, acceptorSecret: SharedSecret = secret
    ) throws -> (dialer: SharedSecretAuthenticator, acceptor: SharedSecretAuthenticator) {
        var dialer = SharedSecretAuthenticator(secret: dialerSecret)
        var acceptor = SharedSecretAuthenticator(secret: acceptorSecret)
        let transcript = Self.transcript(dialer, acceptor)
        try dialer.bind(to: transcript, as: .dialer)
        try acceptor.bind(to: transcript, as: .acceptor)
        return (dialer, acceptor)
    }

    static func message(_ text: String, id: UInt64 = 1) -> Frame {
        .message(MessageFrame(header: MessageHeader(typeName: "test.Text", id: MessageID(id)), payload: ByteBuffer(string: text)))
    }

    static func sealedBody(_ frame: Frame) -> ByteBuffer {
        guard case .sealed(let body) = frame else { preconditionFailure("not sealed: \(frame)") }
        return body
    }

    @Test("each side's proof verifies on the other side; a different secret's proof does not")
    func proofs() throws {
        let (dialer, acceptor) = try Self.pair()
        #expect(acceptor.isValidPeerProof(dialer.localProof()))
        #expect(dialer.isValidPeerProof(acceptor.localProof()))
        // A proof is bound to its role: the acceptor's own proof is not a valid dialer proof (no reflection).
        #expect(!acceptor.isValidPeerProof(acceptor.localProof()))
        #expect(dialer.localProof().readableBytes == 32)

        let (stranger, victim) = try Self.pair(dialerSecret: .generate())
        #expect(!victim.isValidPeerProof(stranger.localProof()))
        #expect(!stranger.isValidPeerProof(victim.localProof()))
    }

    @Test("proofs are bound to the transcript: another hello or another offer gives another proof")
    func transcriptBinding() throws {
        var dialer = SharedSecretAuthenticator(secret: Self.secret)
        var acceptor = SharedSecretAuthenticator(secret: Self.secret)
        try dialer.bind(to: Self.transcript(dialer, acceptor, acceptorHello: "a"), as: .dialer)
        try acceptor.bind(to: Self.transcript(dialer, acceptor, acceptorHello: "A"), as: .acceptor)
        #expect(!dialer.isValidPeerProof(acceptor.localProof()))

        // A proof recorded on one connection does not verify on another one, even between the same two secrets.
        let (first, _) = try Self.pair()
        let (_, second) = try Self.pair()
        #expect(!second.isValidPeerProof(first.localProof()))
    }

    @Test("a frame sealed by one side opens on the other, in both directions, and its bytes hide the plaintext")
    func roundTrip() throws {
        let (dialer, acceptor) = try Self.pair()
        var dialerKeys = dialer.frameProtection()
        var acceptorKeys = acceptor.frameProtection()
        for index in 1...3 {
            let frame = Self.message("secret marker \(index)", id: UInt64(index))
            let sealed = try dialerKeys.seal(frame, allocator: ByteBufferAllocator())
            let body = Self.sealedBody(sealed)
            #expect(body.readableBytes == frame.bodySize + 16)
            #expect(!String(decoding: body.readableBytesView, as: UTF8.self).contains("secret marker"))
            #expect(try acceptorKeys.open(sealed: body) == frame)
        }
        let reply = Frame.close(CloseFrame(code: .goingAway, message: "bye"))
        #expect(try dialerKeys.open(sealed: Self.sealedBody(try acceptorKeys.seal(reply, allocator: ByteBufferAllocator()))) == reply)
    }

    @Test("a flipped bit anywhere in a sealed body fails as a forged frame", arguments: [0, 5, 20, 40])
    func tagFailure(position: Int) throws {
        let (dialer, acceptor) = try Self.pair()
        var dialerKeys = dialer.frameProtection()
        var acceptorKeys = acceptor.frameProtection()
        var body = Self.sealedBody(try dialerKeys.seal(Self.message("hello there, twenty-odd bytes"), allocator: ByteBufferAllocator()))
        let index = body.readerIndex + min(position, body.readableBytes - 1)
        body.setInteger(body.getInteger(at: index, as: UInt8.self)! ^ 0x01, at: index)
        #expect(throws: WireError.forgedFrame) { try acceptorKeys.open(sealed: body) }
    }

    @Test("the record counter is implicit: a replayed, reordered or skipped frame fails, as does one from the wrong direction")
    func counterMismatch() throws {
        let (dialer, acceptor) = try Self.pair()
        var sender = dialer.frameProtection()
        let allocator = ByteBufferAllocator()
        let bodies = try (1...3).map { Self.sealedBody(try sender.seal(Self.message("m\($0)", id: UInt64($0)), allocator: allocator)) }

        var replayed = acceptor.frameProtection()
        #expect(try replayed.open(sealed: bodies[0]) == Self.message("m1", id: 1))
        #expect(throws: WireError.forgedFrame) { try replayed.open(sealed: bodies[0]) }

        var reordered = acceptor.frameProtection()
        #expect(throws: WireError.forgedFrame) { try reordered.open(sealed: bodies[1]) }

        var skipped = acceptor.frameProtection()
        #expect(try skipped.open(sealed: bodies[0]) == Self.message("m1", id: 1))
        #expect(throws: WireError.forgedFrame) { try skipped.open(sealed: bodies[2]) }

        // The dialer's own frame reflected back at it: its receiving key is the acceptor's sending key.
        var reflected = dialer.frameProtection()
        #expect(throws: WireError.forgedFrame) { try reflected.open(sealed: bodies[0]) }
    }

    @Test("offers that cannot be used are refused when binding", arguments: [
        ("other-scheme", nil, nil, "scheme"),
        (nil, "c2hvcnQ=", nil, "auth.nonce"),
        (nil, nil, "bm90IGEga2V5", "auth.key"),
        (nil, nil, Data(count: 32).base64EncodedString(), "low-order"),
    ] as [(String?, String?, String?, String)])
    func unusableOffers(scheme: String?, nonce: String?, key: String?, expected: String) {
        var acceptor = SharedSecretAuthenticator(secret: Self.secret)
        let honest = SharedSecretAuthenticator(secret: Self.secret).offer
        let offer = Hello.AuthOffer(scheme: scheme ?? honest.scheme, nonce: nonce ?? honest.nonce, key: key ?? honest.key)
        let transcript = HandshakeTranscript(
            dialerHello: HelloFrame(minimumVersion: 1, maximumVersion: 1, body: ByteBuffer()),
            acceptorHello: HelloFrame(minimumVersion: 1, maximumVersion: 1, body: ByteBuffer()),
            dialerOffer: offer, acceptorOffer: acceptor.offer
        )
        do {
            try acceptor.bind(to: transcript, as: .acceptor)
            Issue.record("bound to an unusable offer")
        } catch {
            guard case .malformedHello(let reason) = error else {
                Issue.record("unexpected error \(error)")
                return
            }
            #expect(reason.contains(expected), "\(reason)")
        }
    }

    @Test("two handshake state machines with the real authenticator agree, then exchange sealed frames")
    func throughTheStateMachine() throws {
        let hello = Hello(peerID: UUID().uuidString, name: "n")
        var dialer = HandshakeStateMachine(role: .dialer, hello: hello, authenticator: SharedSecretAuthenticator(secret: Self.secret))
        var acceptor = HandshakeStateMachine(role: .acceptor, hello: hello, authenticator: SharedSecretAuthenticator(secret: Self.secret))
        _ = acceptor.start()
        guard case .send(let dialerHello) = dialer.start(),
            case .send(let answer) = acceptor.receive(dialerHello[0]),
            case .send = dialer.receive(answer[0]),
            case .established(_, let proof) = dialer.receive(answer[1]),
            case .established = acceptor.receive(proof[0])
        else {
            Issue.record("the handshake did not complete")
            return
        }
        var dialerKeys = try #require(dialer.frameProtection)
        var acceptorKeys = try #require(acceptor.frameProtection)
        let frame = Self.message("through the machines")
        #expect(try acceptorKeys.open(sealed: Self.sealedBody(try dialerKeys.seal(frame, allocator: ByteBufferAllocator()))) == frame)
    }
}
