import Foundation
import NIOCore
import ParleyWire
import Testing

@Suite("Handshake state machine")
struct HandshakeStateMachineTests {
    static let peerID = "6f1c7a52-93c4-4d0e-9a7d-0b7f6f1f0a11"
    static let localHello = Hello(peerID: "c0a80f2e-4b1d-4e6a-8f3c-9d2e1b7a5c40", name: "a")

    static func hello(min: UInt16 = 1, max: UInt16 = 1, json: String? = nil) -> Frame {
        let body = json ?? #"{"peerID":"\#(peerID)","name":"b","capabilities":["heartbeat"],"accepts":[]}"#
        return .hello(HelloFrame(minimumVersion: min, maximumVersion: max, body: ByteBuffer(string: body)))
    }

    static func machine(
        _ role: ConnectionRole, min: UInt16 = 1, max: UInt16 = 1, authenticator: FakeAuthenticator? = nil
    ) -> HandshakeStateMachine {
        var machine = HandshakeStateMachine(
            role: role, hello: localHello, authenticator: authenticator, minimumVersion: min, maximumVersion: max
        )
        if role == .acceptor { #expect(machine.start() == nil) }
        return machine
    }

    @Test("the dialer speaks first; the acceptor answers only after the dialer's hello")
    func roles() throws {
        var dialer = HandshakeStateMachine(role: .dialer, hello: Self.localHello)
        guard case .send(let frames) = dialer.start(), case .hello(let sent) = frames.first, frames.count == 1 else {
            Issue.record("the dialer did not start with its hello")
            return
        }
        let decoded = try JSONDecoder().decode(Hello.self, from: Data(sent.body.readableBytesView))
        #expect(decoded == Self.localHello && decoded.auth == nil)
        var acceptor = Self.machine(.acceptor)
        guard case .established(let outcome, let reply) = acceptor.receive(Self.hello()) else {
            Issue.record("acceptor did not establish")
            return
        }
        let version = outcome.version
        let hello = outcome.hello
        #expect(version == 1 && hello.name == "b" && hello.capabilities == ["heartbeat"])
        #expect(reply.count == 1 && { if case .hello = reply[0] { true } else { false } }())
        guard case .established(_, let dialerSends) = dialer.receive(Self.hello()) else {
            Issue.record("dialer did not establish")
            return
        }
        #expect(dialerSends.isEmpty)
        #expect(dialer.frameProtection == nil && acceptor.frameProtection == nil)
    }

    @Test("the highest common version is chosen")
    func negotiation() {
        var machine = Self.machine(.acceptor, min: 1, max: 3)
        guard case .established(let outcome, _) = machine.receive(Self.hello(min: 2, max: 5)) else {
            Issue.record("no agreement")
            return
        }
        let version = outcome.version
        #expect(version == 3)
    }

    @Test("incompatible versions fail with a message naming both ranges, and the peer is told")
    func incompatible() {
        var machine = Self.machine(.acceptor)
        guard case .fail(let error, let notify) = machine.receive(Self.hello(min: 7, max: 9)) else {
            Issue.record("accepted an incompatible version")
            return
        }
        #expect(notify)
        #expect(error.closeCode == .incompatibleVersion)
        #expect(error.description.contains("version 1") && error.description.contains("versions 7–9"))
    }

    @Test("a hello whose JSON is invalid or lacks a UUID peer id fails", arguments: [
        "{not json", #"{"peerID":"not-a-uuid","name":"x","capabilities":[],"accepts":[]}"#, #"{"name":"x"}"#,
    ])
    func malformedHello(json: String) {
        var machine = Self.machine(.acceptor)
        guard case .fail(.malformedHello, true) = machine.receive(Self.hello(json: json)) else {
            Issue.record("accepted a malformed hello")
            return
        }
    }

    @Test("the reason a peer in any language is told is plain words: no Swift error names, no type names", arguments: [
        ("{not json", "malformed hello: not valid JSON"),
        (#"{"name":"x"}"#, #"malformed hello: missing key "peerID""#),
        (#"{"peerID":5,"name":"x","capabilities":[],"accepts":[]}"#, "malformed hello: expected a string at peerID"),
        (#"{"peerID":"6f1c7a52-93c4-4d0e-9a7d-0b7f6f1f0a11","name":"x","capabilities":"all","accepts":[]}"#, "malformed hello: expected a list at capabilities"),
    ])
    func plainReasons(json: String, reason: String) {
        var machine = Self.machine(.acceptor)
        guard case .fail(let error, true) = machine.receive(Self.hello(json: json)) else {
            Issue.record("accepted a malformed hello")
            return
        }
        #expect(error.description == reason)
    }

    @Test("a first frame that cannot be read is named once, by what was wrong with it")
    func malformedFirstFrame() {
        let error = HandshakeError.malformedFirstFrame(.unknownFrameKind(0x7F))
        #expect(error.closeCode == .protocolViolation)
        #expect(error.description == "expected a hello frame first: unknown frame kind 0x7F")
        // A later frame (a proof, say) is not blamed on the hello.
        let later = HandshakeError.malformedFrame(.unknownFrameKind(0x7F))
        #expect(later.closeCode == .protocolViolation)
        #expect(later.description == "unreadable frame during the handshake: unknown frame kind 0x7F")
    }

    @Test("a hello over 64 KiB is refused unparsed; a name longer than a DNS-SD label or an over-long type name is refused")
    func helloLimits() {
        let name63 = String(repeating: "n", count: 63)
        var fits = Self.machine(.acceptor)
        guard case .established = fits.receive(Self.hello(json: #"{"peerID":"\#(Self.peerID)","name":"\#(name63)","capabilities":[],"accepts":["a.B"]}"#)) else {
            Issue.record("a 63-byte name was refused")
            return
        }
        var longName = Self.machine(.acceptor)
        #expect(
            longName.receive(Self.hello(json: #"{"peerID":"\#(Self.peerID)","name":"\#(name63)é","capabilities":[],"accepts":[]}"#))
                == .fail(.malformedHello("the name is 65 bytes; at most 63 (a DNS-SD label)"), notifyPeer: true))
        var longType = Self.machine(.acceptor)
        let type = String(repeating: "t", count: 1025)
        #expect(
            longType.receive(Self.hello(json: #"{"peerID":"\#(Self.peerID)","name":"x","capabilities":[],"accepts":["\#(type)"]}"#))
                == .fail(.malformedHello("an accepted type name is 1025 bytes; 1 to 1024 are allowed"), notifyPeer: true))
        // Not even valid JSON: the size alone refuses it, before any parsing.
        var huge = Self.machine(.acceptor)
        let body = String(repeating: "x", count: Hello.maximumBodySize + 1)
        #expect(
            huge.receive(Self.hello(json: body))
                == .fail(.malformedHello("the hello is 65537 bytes; at most 65536 are accepted"), notifyPeer: true))
    }

    @Test("anything but a hello first is a violation, on either side")
    func unexpected() {
        var dialer = HandshakeStateMachine(role: .dialer, hello: Self.localHello)
        _ = dialer.start()
        #expect(dialer.receive(.pong(7)) == .fail(.unexpectedFrame("pong"), notifyPeer: true))
        var acceptor = Self.machine(.acceptor)
        #expect(acceptor.receive(.ping(1)) == .fail(.unexpectedFrame("ping"), notifyPeer: true))
        var sealedFirst = Self.machine(.acceptor, authenticator: FakeAuthenticator(secret: "k"))
        #expect(sealedFirst.receive(.sealed(ByteBuffer(repeating: 0, count: 17))) == .fail(.unexpectedFrame("sealed"), notifyPeer: true))
    }

    @Test("a close frame during the handshake is the peer's refusal, not answered")
    func refused() {
        var dialer = HandshakeStateMachine(role: .dialer, hello: Self.localHello)
        _ = dialer.start()
        let close = CloseFrame(code: .incompatibleVersion, message: "upgrade")
        #expect(dialer.receive(.close(close)) == .fail(.refusedByPeer(code: .incompatibleVersion, message: "upgrade"), notifyPeer: false))
    }

    // MARK: - With a shared secret

    /// Runs a dialer and an acceptor against each other, frame by frame; returns what each ended with.
    static func exchange(
        dialer: inout HandshakeStateMachine, acceptor: inout HandshakeStateMachine
    ) -> (dialer: HandshakeStateMachine.Action?, acceptor: HandshakeStateMachine.Action?) {
        var toAcceptor: [Frame] = []
        var toDialer: [Frame] = []
        var results: (dialer: HandshakeStateMachine.Action?, acceptor: HandshakeStateMachine.Action?) = (nil, nil)
        if case .send(let frames) = dialer.start() { toAcceptor += frames }
        while results.dialer == nil || results.acceptor == nil, !toAcceptor.isEmpty || !toDialer.isEmpty {
            if results.acceptor == nil, !toAcceptor.isEmpty {
                switch acceptor.receive(toAcceptor.removeFirst()) {
                case .send(let frames): toDialer += frames
                case .established(let outcome, let frames):
                    toDialer += frames
                    results.acceptor = .established(outcome, send: frames)
                case .fail(let error, let notify):
                    if notify { toDialer.append(.close(CloseFrame(code: error.closeCode, message: error.description))) }
                    results.acceptor = .fail(error, notifyPeer: notify)
                }
            } else if results.dialer == nil, !toDialer.isEmpty {
                switch dialer.receive(toDialer.removeFirst()) {
                case .send(let frames): toAcceptor += frames
                case .established(let outcome, let frames):
                    toAcceptor += frames
                    results.dialer = .established(outcome, send: frames)
                case .fail(let error, let notify):
                    if notify { toAcceptor.append(.close(CloseFrame(code: error.closeCode, message: error.description))) }
                    results.dialer = .fail(error, notifyPeer: notify)
                }
            } else {
                break
            }
        }
        return results
    }

    @Test("with a secret the acceptor proves first, then the dialer; both end with the same transcript and keys; the peer's hello is known while its proof is awaited")
    func authenticated() throws {
        var dialer = HandshakeStateMachine(role: .dialer, hello: Self.localHello, authenticator: FakeAuthenticator(secret: "k"))
        var acceptor = Self.machine(.acceptor, authenticator: FakeAuthenticator(secret: "k"))

        guard case .send(let first) = dialer.start(), case .hello(let dialerHello) = first.first else {
            Issue.record("the dialer did not send its hello")
            return
        }
        let offer = try JSONDecoder().decode(Hello.self, from: Data(dialerHello.body.readableBytesView)).auth
        #expect(offer == FakeAuthenticator(secret: "k").offer)

        guard case .send(let answer) = acceptor.receive(first[0]), answer.count == 2,
            case .hello = answer[0], case .auth(let acceptorProof) = answer[1]
        else {
            Issue.record("the acceptor did not answer with its hello and its proof")
            return
        }
        #expect(String(buffer: acceptorProof) == "acceptor:k")
        #expect(acceptor.pendingPeerHello?.name == "a")
        #expect(dialer.pendingPeerHello == nil)
        #expect(dialer.receive(answer[0]) == .send([]))
        #expect(dialer.pendingPeerHello?.peerID == Self.localHello.peerID)
        guard case .established(let outcome, let proof) = dialer.receive(answer[1]) else {
            Issue.record("the dialer did not accept the acceptor's proof")
            return
        }
        let acceptorHello = outcome.hello
        #expect(acceptorHello.auth == FakeAuthenticator(secret: "k").offer)
        #expect(proof == [.auth(ByteBuffer(string: "dialer:k"))])
        guard case .established(let outcome, let none) = acceptor.receive(proof[0]) else {
            Issue.record("the acceptor did not accept the dialer's proof")
            return
        }
        let hello = outcome.hello
        #expect(hello.name == "a" && none.isEmpty)
        #expect(acceptor.pendingPeerHello == nil && dialer.pendingPeerHello == nil)
        let dialerKeys = try #require(dialer.frameProtection as? FakeProtection)
        let acceptorKeys = try #require(acceptor.frameProtection as? FakeProtection)
        #expect(dialerKeys.transcript == acceptorKeys.transcript)
        #expect(dialerKeys.transcript.dialerHello == dialerHello)
    }

    @Test("different secrets: the dialer rejects the acceptor's proof, and both fail with wrongSecret")
    func wrongSecret() {
        var dialer = HandshakeStateMachine(role: .dialer, hello: Self.localHello, authenticator: FakeAuthenticator(secret: "one"))
        var acceptor = Self.machine(.acceptor, authenticator: FakeAuthenticator(secret: "two"))
        let (dialerResult, acceptorResult) = Self.exchange(dialer: &dialer, acceptor: &acceptor)
        #expect(dialerResult == .fail(.wrongSecret, notifyPeer: true))
        #expect(acceptorResult == .fail(.wrongSecret, notifyPeer: false))
        #expect(HandshakeError.wrongSecret.closeCode == .authenticationFailed)
        #expect(HandshakeError.wrongSecret.description.contains("the peer does not know this node's shared secret"))
        #expect(dialer.frameProtection == nil && acceptor.frameProtection == nil)
    }

    @Test(
        "a side with a secret and a side without refuse each other, both saying a secret is required",
        arguments: [ConnectionRole.dialer, .acceptor]
    )
    func secretOnOneSide(withSecret: ConnectionRole) {
        let authenticator = FakeAuthenticator(secret: "k")
        var dialer = HandshakeStateMachine(role: .dialer, hello: Self.localHello, authenticator: withSecret == .dialer ? authenticator : nil)
        var acceptor = Self.machine(.acceptor, authenticator: withSecret == .acceptor ? authenticator : nil)
        let (dialerResult, acceptorResult) = Self.exchange(dialer: &dialer, acceptor: &acceptor)
        let (secretSide, openSide) = withSecret == .dialer ? (dialerResult, acceptorResult) : (acceptorResult, dialerResult)
        guard case .fail(.peerHasNoSecret, _) = secretSide, case .fail(.secretRequiredByPeer, _) = openSide else {
            Issue.record("expected a refusal on both sides, got \(String(describing: dialerResult)) / \(String(describing: acceptorResult))")
            return
        }
        #expect(HandshakeError.secretRequiredByPeer.description.hasPrefix("the peer requires a shared secret; configure secretFile"))
        #expect(HandshakeError.peerHasNoSecret.description.contains("requires a shared secret"))
        #expect(HandshakeError.peerHasNoSecret.closeCode == .authenticationRequired)
    }

    @Test("with a secret, anything but the proof after the hellos is refused and nothing is established")
    func missingProof() {
        var acceptor = Self.machine(.acceptor, authenticator: FakeAuthenticator(secret: "k"))
        var dialer = HandshakeStateMachine(role: .dialer, hello: Self.localHello, authenticator: FakeAuthenticator(secret: "k"))
        guard case .send(let hello) = dialer.start() else {
            Issue.record("the dialer did not start with its hello")
            return
        }
        guard case .send = acceptor.receive(hello[0]) else {
            Issue.record("the acceptor did not answer the hello")
            return
        }
        let message = Frame.message(MessageFrame(header: MessageHeader(typeName: "t", id: MessageID(1)), payload: ByteBuffer()))
        #expect(acceptor.receive(message) == .fail(.missingProof(received: "message"), notifyPeer: true))
        #expect(acceptor.frameProtection == nil)
        #expect(HandshakeError.missingProof(received: "message").closeCode == .protocolViolation)
    }

    @Test("an offer the authenticator cannot use fails the handshake and tells the peer")
    func unusableOffer() {
        var acceptor = Self.machine(.acceptor, authenticator: FakeAuthenticator(secret: "k"))
        let json = #"{"peerID":"\#(Self.peerID)","name":"b","capabilities":[],"accepts":[],"auth":{"scheme":"other","nonce":"n","key":"e"}}"#
        #expect(acceptor.receive(Self.hello(json: json)) == .fail(.malformedHello("scheme other"), notifyPeer: true))
    }
}

/// Stands in for the real (crypto) authenticator: the proof of role r with secret k is the text "r:k".
struct FakeAuthenticator: HandshakeAuthenticator {
    var secret: String
    var transcript: HandshakeTranscript?
    var role = ConnectionRole.dialer

    init(secret: String) { self.secret = secret }

    var offer: Hello.AuthOffer { Hello.AuthOffer(scheme: "fake", nonce: "bm9uY2U=", key: "a2V5") }

    mutating func bind(to transcript: HandshakeTranscript, as role: ConnectionRole) throws(HandshakeError) {
        let peer = role == .dialer ? transcript.acceptorOffer : transcript.dialerOffer
        guard peer.scheme == "fake" else { throw .malformedHello("scheme \(peer.scheme)") }
        self.transcript = transcript
        self.role = role
    }

    func localProof() -> ByteBuffer { ByteBuffer(string: "\(role == .dialer ? "dialer" : "acceptor"):\(secret)") }

    func isValidPeerProof(_ proof: ByteBuffer) -> Bool {
        String(buffer: proof) == "\(role == .dialer ? "acceptor" : "dialer"):\(secret)"
    }

    func frameProtection() -> any FrameProtection { FakeProtection(transcript: transcript!) }
}

struct FakeProtection: FrameProtection {
    var transcript: HandshakeTranscript
    func seal(_ frame: Frame, allocator: ByteBufferAllocator) throws -> Frame { frame }
    func open(sealed body: ByteBuffer) throws(WireError) -> Frame { .sealed(body) }
}
