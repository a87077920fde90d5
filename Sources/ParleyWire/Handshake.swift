import Foundation
import NIOCore

/// Which side of a connection we are. The dialer speaks first; the acceptor answers only after it has seen
/// the dialer's first frame.
public enum ConnectionRole: Sendable, Hashable {
    case dialer
    case acceptor
}

/// The handshake of one connection as a plain state machine: feed it frames, do what it returns.
///
/// Open (no authenticator): the dialer sends its hello, the acceptor answers with its own, done. With an
/// authenticator (a shared secret) both hellos carry an offer (nonce and ephemeral key), then the acceptor
/// proves it knows the secret (an auth frame behind its hello), the dialer checks that and proves it in turn, and
/// the acceptor checks the dialer's proof. Only then is the connection established, and from then on every frame
/// is sealed with ``frameProtection``. A side with a secret never talks to a side without one: both refuse.
public struct HandshakeStateMachine: Sendable {
    /// The peer: the negotiated version and its hello.
    public struct Outcome: Sendable, Hashable {
        public var version: UInt16
        public var hello: Hello
    }

    public enum Action: Sendable, Hashable {
        /// Send these frames, in order, then keep feeding frames in.
        case send([Frame])
        /// Send these frames (maybe none) and the connection is established. With an authenticator, every frame
        /// after them, both ways, is sealed with ``HandshakeStateMachine/frameProtection``.
        case established(Outcome, send: [Frame])
        /// Tell the peer why (unless it was the peer that refused, or it could not understand), then close.
        case fail(HandshakeError, notifyPeer: Bool)
    }

    private enum State: Sendable {
        case idle
        case awaitingHello
        /// Both hellos are known; waiting for the peer's proof of the shared secret.
        case awaitingProof(version: UInt16, hello: Hello)
        case done
    }

    public let role: ConnectionRole
    public let minimumVersion: UInt16
    public let maximumVersion: UInt16
    /// Our hello exactly as it goes on the wire: the authenticated transcript is made of these bytes.
    private let localHello: HelloFrame
    private var authenticator: (any HandshakeAuthenticator)?
    private var state: State = .idle
    /// Set when an authenticated handshake is established: seals and opens every later frame.
    public private(set) var frameProtection: (any FrameProtection)?

    /// - Parameters:
    ///   - hello: what this side says about itself; its `auth` is filled in from `authenticator`.
    ///   - authenticator: `nil` for an open connection.
    public init(
        role: ConnectionRole,
        hello: Hello,
        authenticator: (any HandshakeAuthenticator)? = nil,
        minimumVersion: UInt16 = ProtocolVersion.minimumSupported,
        maximumVersion: UInt16 = ProtocolVersion.current
    ) {
        self.role = role
        self.minimumVersion = minimumVersion
        self.maximumVersion = maximumVersion
        self.authenticator = authenticator
        var hello = hello
        hello.auth = authenticator?.offer
        // A struct of strings and arrays of strings always encodes.
        let json = try! JSONEncoder().encode(hello)
        localHello = HelloFrame(minimumVersion: minimumVersion, maximumVersion: maximumVersion, body: ByteBuffer(bytes: json))
    }

    /// The peer's hello while its proof of the secret is awaited (nil before, and once the handshake is over).
    public var pendingPeerHello: Hello? {
        if case .awaitingProof(_, let hello) = state { hello } else { nil }
    }

    /// Call once when the connection is up. The dialer sends its hello at once.
    public mutating func start() -> Action? {
        guard case .idle = state else { preconditionFailure("start() called twice") }
        state = .awaitingHello
        return role == .dialer ? .send([.hello(localHello)]) : nil
    }

    /// Call with every frame that arrives until the handshake is established or has failed.
    public mutating func receive(_ frame: Frame) -> Action {
        switch state {
        case .awaitingHello:
            state = .done
            return receiveFirst(frame)
        case .awaitingProof(let version, let hello):
            state = .done
            return receiveProof(frame, version: version, hello: hello)
        case .idle, .done:
            preconditionFailure("frame received outside the handshake")
        }
    }

    private mutating func receiveFirst(_ frame: Frame) -> Action {
        switch frame {
        case .hello(let peerHello):
            let lower = max(minimumVersion, peerHello.minimumVersion)
            let upper = min(maximumVersion, peerHello.maximumVersion)
            guard lower <= upper else {
                let remote = peerHello.minimumVersion...max(peerHello.minimumVersion, peerHello.maximumVersion)
                return .fail(.incompatibleVersion(local: minimumVersion...maximumVersion, remote: remote), notifyPeer: true)
            }
            // Checked before it is parsed: a hello as large as a frame would cost a decode, then a log line, as large.
            guard peerHello.body.readableBytes <= Hello.maximumBodySize else {
                return .fail(
                    .malformedHello("the hello is \(peerHello.body.readableBytes) bytes; at most \(Hello.maximumBodySize) are accepted"),
                    notifyPeer: true)
            }
            let decoded: Hello
            do {
                decoded = try JSONDecoder().decode(Hello.self, from: Data(peerHello.body.readableBytesView))
            } catch {
                return .fail(.malformedHello(PayloadProblem(error).description), notifyPeer: true)
            }
            guard UUID(uuidString: decoded.peerID) != nil else {
                return .fail(.malformedHello("peerID \"\(decoded.peerID)\" is not a UUID"), notifyPeer: true)
            }
            if let problem = decoded.problem { return .fail(.malformedHello(problem), notifyPeer: true) }
            guard var authenticator else {
                if decoded.auth != nil { return .fail(.secretRequiredByPeer, notifyPeer: true) }
                return .established(Outcome(version: upper, hello: decoded), send: role == .acceptor ? [.hello(localHello)] : [])
            }
            guard let peerOffer = decoded.auth else { return .fail(.peerHasNoSecret, notifyPeer: true) }
            let transcript =
                role == .dialer
                ? HandshakeTranscript(dialerHello: localHello, acceptorHello: peerHello, dialerOffer: authenticator.offer, acceptorOffer: peerOffer)
                : HandshakeTranscript(dialerHello: peerHello, acceptorHello: localHello, dialerOffer: peerOffer, acceptorOffer: authenticator.offer)
            do {
                try authenticator.bind(to: transcript, as: role)
            } catch {
                return .fail(error, notifyPeer: true)
            }
            self.authenticator = authenticator
            state = .awaitingProof(version: upper, hello: decoded)
            // The acceptor proves itself first; the dialer waits for that proof before giving its own, so that a
            // peer without the secret learns nothing from the dialer.
            return .send(role == .acceptor ? [.hello(localHello), .auth(authenticator.localProof())] : [])
        case .close(let close):
            return .fail(refusal(close), notifyPeer: false)
        default:
            return .fail(.unexpectedFrame(Self.name(of: frame)), notifyPeer: true)
        }
    }

    private mutating func receiveProof(_ frame: Frame, version: UInt16, hello: Hello) -> Action {
        guard let authenticator else { preconditionFailure("awaiting a proof without an authenticator") }
        switch frame {
        case .auth(let proof):
            guard authenticator.isValidPeerProof(proof) else { return .fail(.wrongSecret, notifyPeer: true) }
            frameProtection = authenticator.frameProtection()
            return .established(Outcome(version: version, hello: hello), send: role == .dialer ? [.auth(authenticator.localProof())] : [])
        case .close(let close):
            return .fail(refusal(close), notifyPeer: false)
        default:
            return .fail(.missingProof(received: Self.name(of: frame)), notifyPeer: true)
        }
    }

    /// The peer's close frame during the handshake, as the error this side reports. The authentication codes
    /// become errors worded from this side's point of view.
    private func refusal(_ close: CloseFrame) -> HandshakeError {
        switch close.code {
        case .authenticationRequired: authenticator == nil ? .secretRequiredByPeer : .peerHasNoSecret
        case .authenticationFailed: .wrongSecret
        default: .refusedByPeer(code: close.code, message: close.message)
        }
    }

    public static func name(of frame: Frame) -> String {
        switch frame {
        case .hello: "hello"
        case .auth: "auth"
        case .sealed: "sealed"
        case .message: "message"
        case .errorReply: "error-reply"
        case .ping: "ping"
        case .pong: "pong"
        case .close: "close"
        }
    }
}

/// Why a handshake did not complete.
public enum HandshakeError: Error, Sendable, Hashable, CustomStringConvertible {
    case incompatibleVersion(local: ClosedRange<UInt16>, remote: ClosedRange<UInt16>)
    case malformedHello(String)
    case unexpectedFrame(String)
    /// The first frame could not be read at all (a wrong start byte, an unknown kind, a broken body).
    case malformedFirstFrame(WireError)
    /// A later frame of the handshake (the hello's successor: a proof, a close) could not be read.
    case malformedFrame(WireError)
    case refusedByPeer(code: ErrorCode, message: String)
    case timedOut(seconds: Double)
    /// The peer's proof did not verify, or the peer said ours did not: the two sides hold different secrets.
    case wrongSecret
    /// This node has no shared secret; the peer requires one.
    case secretRequiredByPeer
    /// This node requires a shared secret; the peer has none (its hello offered no authentication).
    case peerHasNoSecret
    /// After the hellos of an authenticated handshake, something other than the peer's proof arrived.
    case missingProof(received: String)
    /// The hello claims the id of a peer that is connected from another address; the connected one keeps it.
    case peerIDInUse(String, connectedFrom: String)
    /// An app in the original Swift Talk debugger framing connected to a node that does not accept that framing.
    case originalFramingNotAccepted
    /// An app in the original framing (which cannot authenticate) connected to a node that requires a secret.
    case originalFramingNeedsSecret
    /// This node authenticates devices by their certificates over TLS; the peer spoke Parley in the clear.
    case deviceAuthenticationRequired
    /// Over TLS: the peer's certificate (its fingerprint given) is not one this node trusts.
    case deviceNotTrusted(fingerprint: String)
    /// The TLS handshake of a connection that began like one (0x16) failed; what the TLS library said.
    case tlsFailed(String)
    /// Over TLS: this node does not trust the peer yet and asks a person to accept it (the message says how).
    case pairingRequested(message: String)
    /// Over TLS: the node this one dialled does not trust it yet and has recorded a pairing request; `code` is the
    /// code this side computes, which a person compares with the one the other side shows.
    case pairingRequestedByPeer(code: String, message: String)

    public var description: String {
        switch self {
        case .incompatibleVersion(let local, let remote):
            "incompatible protocol versions: this peer speaks \(Self.text(local)), the remote peer speaks \(Self.text(remote)); upgrade the older side"
        case .malformedHello(let reason):
            "malformed hello: \(reason.excerpt())"
        case .unexpectedFrame(let name):
            "expected a hello frame first, received a \(name) frame"
        case .malformedFirstFrame(let error):
            "expected a hello frame first: \(error)"
        case .malformedFrame(let error):
            "unreadable frame during the handshake: \(error)"
        case .refusedByPeer(let code, let message):
            "the remote peer refused the connection (\(code)): \(message.excerpt())"
        case .timedOut(let seconds):
            "no hello within \(seconds) s (with a shared secret: no complete handshake, both proofs included)"
        case .wrongSecret:
            "the peer does not know this node's shared secret; give both sides the same secret file"
        case .secretRequiredByPeer:
            "the peer requires a shared secret; configure secretFile (TransceiverConfiguration.sharedSecret) with the peer's secret"
        case .peerHasNoSecret:
            "this node requires a shared secret and the peer has none; configure secretFile (TransceiverConfiguration.sharedSecret) on the peer with this node's secret"
        case .missingProof(let name):
            "expected the peer's auth frame (its proof of the shared secret), received a \(name) frame"
        case .peerIDInUse(let id, let connectedFrom):
            "peer id \(id) is already connected from \(connectedFrom); a connection from another address cannot take it over (if this is that peer after a network change, it is let in once the old connection is found dead, within the heartbeat timeout)"
        case .originalFramingNotAccepted:
            "an app in the original Swift Talk debugger framing (first byte 0xCE) connected, but this node does not accept that framing; closed"
        case .originalFramingNeedsSecret:
            "an app in the original Swift Talk debugger framing cannot authenticate and this node requires a shared secret; refused (set allowOriginalFramingWithoutSecret to let such apps in, unencrypted)"
        case .deviceAuthenticationRequired:
            "this node accepts only devices authenticated by their certificates over TLS, and the peer spoke in the clear; give the peer a device identity (TransceiverConfiguration.devices) and pair it"
        case .deviceNotTrusted(let fingerprint):
            "the device with fingerprint \(fingerprint) is not trusted here; pair it (or add its fingerprint to the trusted devices)"
        case .tlsFailed(let reason):
            "the TLS handshake failed: \(reason.excerpt())"
        case .pairingRequested(let message):
            message
        case .pairingRequestedByPeer(let code, let message):
            "not paired yet: the other side recorded a pairing request; the code here is \(code), accept only if the other side shows the same (it says: \(message.excerpt()))"
        }
    }

    /// The code sent to the peer when we refuse it for this reason.
    public var closeCode: ErrorCode {
        switch self {
        case .incompatibleVersion: .incompatibleVersion
        case .malformedHello, .unexpectedFrame, .malformedFirstFrame, .malformedFrame, .missingProof: .protocolViolation
        case .refusedByPeer(let code, _): code
        case .timedOut: .handshakeTimeout
        case .wrongSecret: .authenticationFailed
        case .secretRequiredByPeer, .peerHasNoSecret, .originalFramingNeedsSecret: .authenticationRequired
        case .originalFramingNotAccepted: .protocolViolation
        case .peerIDInUse: .peerIDInUse
        case .deviceAuthenticationRequired: .deviceAuthenticationRequired
        case .deviceNotTrusted: .deviceNotTrusted
        case .pairingRequested, .pairingRequestedByPeer: .pairingRequested
        case .tlsFailed: .protocolViolation
        }
    }

    private static func text(_ range: ClosedRange<UInt16>) -> String {
        range.lowerBound == range.upperBound ? "version \(range.lowerBound)" : "versions \(range.lowerBound)–\(range.upperBound)"
    }
}
