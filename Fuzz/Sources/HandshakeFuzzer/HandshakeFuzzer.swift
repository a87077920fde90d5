import Foundation
import FuzzSupport
import NIOCore
import ParleyWire

/// Input: a flags byte (bit 0: this side has a shared secret; the other bits are unused), our lowest version (byte % 4), how many versions above it we speak (byte % 4), then a byte
/// stream decoded into frames. The frames are fed, in order, to a fresh handshake in each role until it is
/// established or fails. The authenticator is a stand-in (``FuzzAuthenticator``): the cryptography has its own
/// tests; this target is about which frames the state machine accepts in which order.
///
/// Properties: no crash; an established handshake agrees on the highest common version and a peer id that is a
/// UUID, and with a secret only after a valid proof, with frame protection in place; only the acceptor answers
/// with a hello; a refusal sent to the peer carries a reason of bounded size (it must not reflect or log whatever
/// the peer sent, at any length).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHandshake(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    var input = FuzzInput(data, count: count)
    let flags = input.byte()
    let minimum = UInt16(input.byte() % 4)
    let maximum = minimum + UInt16(input.byte() % 4)
    let frames = decodeStream(input.rest(), maximumBodySize: 1 << 20).frames
    for role in [ConnectionRole.dialer, .acceptor] {
        var run = HandshakeRun(
            role: role, authenticated: flags & 1 != 0, versions: minimum...maximum
        )
        for frame in frames.prefix(8) {
            guard run.receive(frame) else { break }
        }
    }
    return 0
}

/// A reason text we send or log, built from what a peer sent, stays this small whatever the peer sent.
let maximumReasonBytes = 2048

/// One handshake driven frame by frame, checking each action against what came before.
struct HandshakeRun {
    let role: ConnectionRole
    let authenticated: Bool
    let versions: ClosedRange<UInt16>
    var machine: HandshakeStateMachine
    var received: [Frame] = []
    var finished = false

    init(role: ConnectionRole, authenticated: Bool, versions: ClosedRange<UInt16>) {
        self.role = role
        self.authenticated = authenticated
        self.versions = versions
        machine = HandshakeStateMachine(
            role: role,
            hello: Hello(peerID: "0e5a7c1e-1b0e-4b7a-9d55-5f3a9e3c2b10", name: "fuzz"),
            authenticator: authenticated ? FuzzAuthenticator() : nil,
            minimumVersion: versions.lowerBound,
            maximumVersion: versions.upperBound
        )
        let opening = machine.start()
        if role == .dialer {
            guard case .send(let sent) = opening, sent.count == 1, case .hello(let hello) = sent[0] else {
                check(false, "a dialer opened with \(String(describing: opening))")
                return
            }
            check(hello.minimumVersion == versions.lowerBound && hello.maximumVersion == versions.upperBound, "our hello's versions")
        } else {
            check(opening == nil, "an acceptor spoke first: \(String(describing: opening))")
        }
    }

    /// Feeds one frame; returns true while the handshake goes on.
    mutating func receive(_ frame: Frame) -> Bool {
        guard !finished else { return false }
        received.append(frame)
        let action = machine.receive(frame)
        switch action {
        case .send(let frames):
            check(authenticated && received.count == 1, "asked to send \(frames) after \(received)")
            if role == .acceptor {
                guard frames.count == 2, case .hello = frames[0], case .auth(let proof) = frames[1] else {
                    check(false, "an authenticating acceptor answered with \(frames)")
                    return false
                }
                check(proof == FuzzAuthenticator.proof, "the acceptor's proof is not the authenticator's")
            } else {
                check(frames.isEmpty, "an authenticating dialer sent \(frames) before the acceptor's proof")
            }
            return true
        case .established(let outcome, let sent):
            let (version, hello) = (outcome.version, outcome.hello)
            guard case .hello(let helloFrame) = received[0] else {
                check(false, "established by \(received)")
                return false
            }
            let upper = min(versions.upperBound, helloFrame.maximumVersion)
            check(version == upper && version >= max(versions.lowerBound, helloFrame.minimumVersion), "version \(version)")
            check(UUID(uuidString: hello.peerID) != nil, "established with peer id \(hello.peerID)")
            if authenticated {
                check(received.count == 2 && received[1] == .auth(FuzzAuthenticator.proof), "authenticated without the proof: \(received)")
                check(hello.auth != nil, "authenticated with a peer whose hello offered nothing")
                check(machine.frameProtection != nil, "authenticated without frame protection")
                check(sent == (role == .dialer ? [.auth(FuzzAuthenticator.proof)] : []), "\(role) sent \(sent) on completion")
            } else {
                check(received.count == 1, "an open handshake took \(received.count) frames")
                check(hello.auth == nil, "an open node accepted a peer that requires a secret")
                check(machine.frameProtection == nil, "frame protection on an open connection")
                check(role == .acceptor ? sent.count == 1 : sent.isEmpty, "\(role) sent \(sent) on completion")
            }
        case .fail(let error, let notifyPeer):
            switch frame {
            case .close: check(!notifyPeer, "a close frame answered with a close frame")
            default: check(notifyPeer, "refused \(frame) without telling the peer (\(error))")
            }
            check(error.description.utf8.count <= maximumReasonBytes, "a \(error.description.utf8.count)-byte reason: \(error.description.prefix(200))…")
        }
        finished = true
        return false
    }
}

/// Stands in for the shared-secret authenticator: a fixed offer (scheme `fuzz`), and a fixed proof both ways.
/// It checks that the transcript it is bound to carries its own offer.
struct FuzzAuthenticator: HandshakeAuthenticator {
    static let scheme = "fuzz"
    static let proof = ByteBuffer(string: "parley-fuzz-proof")

    var offer: Hello.AuthOffer { Hello.AuthOffer(scheme: Self.scheme, nonce: "bm9uY2U=", key: "a2V5") }

    mutating func bind(to transcript: HandshakeTranscript, as role: ConnectionRole) throws(HandshakeError) {
        let (ours, theirs) = role == .dialer ? (transcript.dialerOffer, transcript.acceptorOffer) : (transcript.acceptorOffer, transcript.dialerOffer)
        check(ours == offer, "bound to a transcript with someone else's offer as ours")
        guard theirs.scheme == Self.scheme else { throw .malformedHello("scheme \"\(theirs.scheme.prefix(64))\"") }
    }

    func localProof() -> ByteBuffer { Self.proof }

    func isValidPeerProof(_ proof: ByteBuffer) -> Bool { proof == Self.proof }

    func frameProtection() -> any FrameProtection { NoProtection() }

    struct NoProtection: FrameProtection {
        mutating func seal(_ frame: Frame, allocator: ByteBufferAllocator) throws -> Frame { frame }
        mutating func open(sealed body: ByteBuffer) throws(WireError) -> Frame { throw .forgedFrame }
    }
}

@_cdecl("HandshakeFuzzer_main")
public func handshakeFuzzerMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runLibFuzzer(argc, argv, fuzzHandshake)
}
