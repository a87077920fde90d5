import NIOCore
import NIOSSL
import ParleyWire
import ParleySecurity
import Synchronization

/// Devices that know each other by their certificates: every TCP connection of this node runs TLS 1.3 with
/// both sides presenting their device certificate, and a peer is let in only if ``trusts`` says yes to its
/// fingerprint (the Syncthing model: pinned, no certificate authority). The control socket is unaffected.
public struct DeviceAuthentication: Sendable {
    /// This node's own key and certificate.
    public var identity: DeviceIdentity
    /// Whether a device may talk to this node. Asked after the TLS handshake of every connection, with the
    /// certificate's fingerprint; a device it refuses gets a close frame with `device-not-trusted` and nothing
    /// else.
    public var trusts: @Sendable (DeviceFingerprint) -> Bool
    /// Whether peers that connect in the clear (no TLS) are still let in, under the node's other mode (open, or
    /// the shared secret): parleyd's way, so that apps not yet given an identity keep working. False: only
    /// devices; a peer in the clear is refused with `device-authentication-required`. Connections this node dials
    /// are TLS either way.
    public var allowsCleartext: Bool
    /// Whether the connections this node dials are TLS with its certificate (an app dialling its debugger). False:
    /// they use the node's other mode (parleyd dialling static peers and the apps it finds, which need no identity).
    public var dialsDevices: Bool = true
    /// Asked, on a connection this node accepted, about a device it does not trust once the device has said who it
    /// is (its hello): a message means a pairing request was recorded, and the device is closed with
    /// `pairing-requested` and that message (what the person on this side does, and this side's code); nil, or no
    /// closure, closes it with `device-not-trusted`. Either way nothing else crosses.
    public var untrusted: (@Sendable (DeviceRequest) -> String?)?
    /// Told of every peer that completed its handshake over TLS, with its fingerprint: an app pins the debugger it
    /// paired with here.
    public var established: (@Sendable (Peer, DeviceFingerprint) -> Void)?
    /// Told when a node this one dialled answered with a pairing request: the code this side shows (compare it with
    /// the node's) and the node's message (what its person does to accept). The dial fails as well; a command-line
    /// tool says this at once instead of waiting for a peer.
    public var pairingRequested: (@Sendable (_ code: PairingCode, _ message: String) -> Void)?

    public init(identity: DeviceIdentity, allowsCleartext: Bool = false, trusts: @escaping @Sendable (DeviceFingerprint) -> Bool) {
        self.identity = identity
        self.allowsCleartext = allowsCleartext
        self.trusts = trusts
    }

    /// Trusts exactly the devices with these fingerprints.
    public init(identity: DeviceIdentity, allowsCleartext: Bool = false, trusting fingerprints: Set<DeviceFingerprint>) {
        self.init(identity: identity, allowsCleartext: allowsCleartext) { fingerprints.contains($0) }
    }
}

/// A device that connected and is not trusted: what it says about itself (unchecked claims, but for its
/// fingerprint) and the pairing code both sides show.
public struct DeviceRequest: Sendable, Hashable {
    public var fingerprint: DeviceFingerprint
    /// The name and peer id of its hello; nil when the hello could not be read.
    public var name: String?
    public var peerID: PeerID?
    public var address: String
    /// The address without its port: what requests from one machine have in common.
    public var host: String
    public var code: PairingCode
}

/// The TLS side of ``DeviceAuthentication``: one server and one client context for the node (made once at start:
/// loading a key is the costly part), and the handler a connection gets from them.
struct DeviceTLS: Sendable {
    let authentication: DeviceAuthentication
    private let server: NIOSSLContext
    private let client: NIOSSLContext

    /// A TLS record begins with its content type; a handshake record, what every TLS connection sends first, is
    /// 22. Neither Parley's framing (0xCF) nor the original debugger's (0xCE) starts with it.
    static let handshakeRecordType: UInt8 = 0x16

    init(_ authentication: DeviceAuthentication) throws {
        self.authentication = authentication
        let identity = authentication.identity
        let certificate = try NIOSSLCertificate(bytes: identity.certificateDER, format: .der)
        let key = try NIOSSLPrivateKey(bytes: Array(identity.privateKeyPEM.utf8), format: .pem)
        let server = TLSConfiguration.makeServerConfiguration(certificateChain: [.certificate(certificate)], privateKey: .privateKey(key))
        var client = TLSConfiguration.makeClientConfiguration()
        client.certificateChain = [.certificate(certificate)]
        client.privateKey = .privateKey(key)
        self.server = try NIOSSLContext(configuration: Self.pinned(server))
        self.client = try NIOSSLContext(configuration: Self.pinned(client))
    }

    /// TLS 1.3 only, the peer's certificate required (on a server too), and checked by its fingerprint
    /// (``PeerCertificate``) rather than against a certificate authority: no trust store is loaded and no host name
    /// compared.
    private static func pinned(_ configuration: TLSConfiguration) -> TLSConfiguration {
        var configuration = configuration
        configuration.minimumTLSVersion = .tlsv13
        configuration.certificateVerification = .noHostnameVerification
        configuration.trustRoots = .certificates([])
        // Closing waits for the peer's close_notify at most this long (NIO SSL's default is five seconds). Parley's
        // own close frame has ended the conversation by then, and a peer that closes TCP without close_notify (a
        // ragged end, which NIO SSL answers by waiting out this timeout) would otherwise hold a connection slot of
        // its address: with a second, a device reconnecting in a loop filled maximumConnectionsPerAddress.
        configuration.shutdownTimeout = .milliseconds(50)
        return configuration
    }

    /// The handler for one connection: the server's on an accepted one, the client's on one this node dialled.
    /// The peer's certificate's fingerprint goes to `peer`. A dialler refuses a server it does not trust in the
    /// TLS handshake itself, so that its hello (its name, its id, the types it accepts) never goes to that server.
    /// An acceptor completes the TLS handshake with any certificate and leaves the decision to the Parley handshake
    /// (``Transceiver/handshake(_:machine:frames:logger:)``), which says why in a close frame before it says
    /// anything else.
    func handler(for role: ConnectionRole, recordingIn peer: PeerCertificate) throws -> NIOSSLHandler {
        let trusts = authentication.trusts
        let verify: NIOSSLCustomVerificationCallback = { certificates, promise in
            guard let leaf = certificates.first, let der = try? leaf.toDERBytes() else {
                promise.succeed(.failed)
                return
            }
            let fingerprint = DeviceFingerprint(certificateDER: der)
            let refused = role == .dialer && !trusts(fingerprint)
            peer.record(fingerprint, refused: refused)
            promise.succeed(refused ? .failed : .certificateVerified)
        }
        switch role {
        case .acceptor: return NIOSSLServerHandler(context: server, customVerificationCallback: verify)
        case .dialer: return try NIOSSLClientHandler(context: client, serverHostname: nil, customVerificationCallback: verify)
        }
    }
}

/// The fingerprint of the certificate a connection's peer presented in its TLS handshake, once it has.
final class PeerCertificate: Sendable {
    private let state = Mutex<(fingerprint: DeviceFingerprint?, refused: Bool)>((nil, false))

    func record(_ fingerprint: DeviceFingerprint, refused: Bool) { state.withLock { $0 = (fingerprint, refused) } }
    /// The fingerprint, if the peer presented a certificate.
    var recorded: DeviceFingerprint? { state.withLock { $0.fingerprint } }
    /// The fingerprint of a certificate this side refused in the TLS handshake.
    var refused: DeviceFingerprint? { state.withLock { $0.refused ? $0.fingerprint : nil } }

    /// Why the Parley handshake cannot go on over this connection, or nil if it can: the peer presented no
    /// certificate (it spoke in the clear), or one that is not trusted.
    func problem(trusts: (DeviceFingerprint) -> Bool) -> HandshakeError? {
        guard let fingerprint = recorded else { return .deviceAuthenticationRequired }
        return trusts(fingerprint) ? nil : .deviceNotTrusted(fingerprint: fingerprint.short)
    }
}

/// How one connection authenticates its peer.
enum ConnectionAuthentication: Sendable {
    /// Open mode, and the control socket.
    case none
    /// Proofs of the node's shared secret in the handshake, then sealed frames.
    case sharedSecret(SharedSecret)
    /// TLS with device certificates; the peer's is recorded in `presented` during the TLS handshake.
    case device(DeviceTLS, presented: PeerCertificate)
}

/// First in an accepted connection's pipeline when devices authenticate. A connection whose first byte begins a
/// TLS handshake record gets the TLS handler after it; any other is left as it came (the framing sniffer above
/// decides what it is, and the handshake refuses it if it must authenticate). Then it leaves the pipeline.
final class TLSSniffer: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let makeHandler: () throws -> NIOSSLHandler
    private let inTheClear: () -> Void

    init(makeHandler: @escaping () throws -> NIOSSLHandler, inTheClear: @escaping () -> Void) {
        self.makeHandler = makeHandler
        self.inTheClear = inTheClear
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = unwrapInboundIn(data)
        guard let first = bytes.getInteger(at: bytes.readerIndex, as: UInt8.self) else { return }
        if first == DeviceTLS.handshakeRecordType {
            do {
                try context.pipeline.syncOperations.addHandler(makeHandler(), position: .after(context.handler))
            } catch {
                context.fireErrorCaught(error)
                return
            }
            // The handshake clock starts with the TLS handshake, not with the first bytes it decrypts: a TLS
            // handshake left half done is held to the same deadline as a hello.
            context.fireUserInboundEventTriggered(ReadActivityHandler.FirstBytes())
        } else {
            inTheClear()
        }
        context.fireChannelRead(data)
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }
}

/// Ahead of a dialler's TLS: a node that refuses the connection at accept (too many connections from this address,
/// its pool full) answers the TLS ClientHello with a Parley close frame in the clear, which TLS would report only as
/// an end during its handshake. Read here, it fails the handshake with the node's own words. The first byte of
/// anything else (a TLS record) hands the connection to TLS, and this handler leaves.
final class ClearRefusalReader: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    /// A close frame is small; anything longer in the clear is not one.
    private var decoder = FrameDecoder(maximumBodySize: 4096)
    private var received: ByteBuffer?

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        if received == nil {
            guard let first = bytes.getInteger(at: bytes.readerIndex, as: UInt8.self) else { return }
            guard first == StartByte.parley.rawValue else {
                context.fireChannelRead(data)
                context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
                return
            }
            received = bytes
        } else {
            received!.writeBuffer(&bytes)
        }
        let error: any Error
        do {
            guard let frame = try decoder.decode(buffer: &received!) else { return }
            if case .close(let close) = frame {
                error = HandshakeError.refusedByPeer(code: close.code, message: close.message)
            } else {
                error = HandshakeError.tlsFailed("the node answered in the clear, not in TLS")
            }
        } catch let wireError {
            error = HandshakeError.tlsFailed("the node answered in the clear, not in TLS: \(wireError)")
        }
        context.fireErrorCaught(error)
        context.close(promise: nil)
    }
}

extension Transceiver {
    /// Closes every connection of the device with `fingerprint` (with `device-not-trusted` and `message`): what a
    /// node does when it stops trusting a device, so that taking it back holds for connections already open too.
    /// Returns how many peers were connected over them (a connection still in its handshake is closed but not
    /// counted).
    @discardableResult
    public func disconnect(device fingerprint: DeviceFingerprint, message: String) -> Int {
        let closing = registry.connections.filter { connection in
            if case .device(_, let presented) = connection.authentication { presented.recorded == fingerprint } else { false }
        }
        for connection in closing {
            let reason = DisconnectReason.closedByUs(.deviceNotTrusted, message: message)
            connection.noteEnd(reason)
            connection.outbound.finish(
                sending: .close(CloseFrame(code: .deviceNotTrusted, message: message)), then: .close, timeout: .seconds(1),
                reason: TransceiverError.connectionClosed(connection.peer?.id ?? PeerID(), reason: reason)
            )
        }
        return closing.count { $0.peer != nil }
    }
}
