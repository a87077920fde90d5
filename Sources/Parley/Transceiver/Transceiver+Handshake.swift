import Foundation
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import ParleyDiscovery
import ParleySecurity
import ParleyWire
import Synchronization

extension Transceiver {
    /// The handshake for a new connection: our hello, and the secret to prove (TCP with a secret configured).
    func makeHandshake(for connection: PeerConnection) -> HandshakeStateMachine {
        let hello = Hello(
            peerID: localPeerID!.rawValue, name: configuration.name,
            capabilities: configuration.capabilities, accepts: router.registeredTypes(includingLocalOnly: connection.channel.isLocalSocket)
        )
        var machine = HandshakeStateMachine(
            role: connection.role, hello: hello,
            authenticator: connection.sharedSecret.map { SharedSecretAuthenticator(secret: $0) }
        )
        // An acceptor's start() sends nothing; a dialer's handshake is started by `handOver`, which sends its hello.
        if connection.role == .acceptor { _ = machine.start() }
        return machine
    }

    /// Writes handshake frames straight to the channel, then (once an authenticated handshake is done) switches
    /// the connection to sealed frames. Both go through the event loop in the order issued, so the switch comes
    /// exactly after the last plaintext frame. The outbound queue is empty during the handshake: nothing can be
    /// sent to a peer before it is registered.
    func write(_ frames: [Frame], on connection: PeerConnection, thenSealWith protection: (any FrameProtection)? = nil) {
        let channel = connection.channel
        channel.writeAndFlush(FrameBatch(frames), promise: nil)
        if let protection {
            channel.triggerUserOutboundEvent(FrameProtectionHandler.Install(protection), promise: nil)
        }
    }

    /// Runs the handshake state machine and registers the peer. Throws ``HandshakeError`` on failure, after
    /// telling the remote side why. No message is read, let alone routed, before the handshake (with a shared
    /// secret: both proofs) is complete. An acceptor's machine is made when the first frame is in: only then is it
    /// known whether the connection authenticates (see ``PeerConnection/waiveSecret()``).
    func handshake(
        _ connection: PeerConnection,
        machine started: HandshakeStateMachine?,
        frames: inout FrameReader,
        logger: Logger
    ) async throws -> Peer {
        var machine = started
        let localID = localPeerID!
        var firstFrame = true
        while true {
            let next: Frame?
            do {
                next = try await frames.next()
            } catch let error as HandshakeError {
                refuse(connection, error)
                throw error
            } catch let error as WireError {
                let refusal: HandshakeError = firstFrame ? .malformedFirstFrame(error) : .malformedFrame(error)
                refuse(connection, refusal)
                throw refusal
            } catch let error as ConnectionLimitExceeded {
                // A limit met before the hello is complete (a hello that stopped arriving): said as after it.
                noteLimitExceeded(error, logger: logger)
                refuse(connection, code: error.closeCode, error)
                throw error
            } catch where error is NIOSSLError || error is BoringSSLError || error is NIOSSLExtraError {
                // The TLS handshake failed: this side did not trust the peer's certificate (said as such), or the bytes
                // after a first 0x16 were not TLS. Either way a failed handshake, counted and logged as any other.
                if case .device(_, let presented) = connection.authentication, let refused = presented.refused {
                    throw HandshakeError.deviceNotTrusted(fingerprint: refused.short)
                }
                throw HandshakeError.tlsFailed("\(error)")
            }
            guard let frame = next else {
                throw HandshakeError.refusedByPeer(code: .goingAway, message: "closed before the handshake")
            }
            if firstFrame, case .device(let tls, let presented) = connection.authentication,
                var problem = presented.problem(trusts: tls.authentication.trusts)
            {
                // The first frame came through TLS only if the TLS handshake, and with it the certificate, came first.
                // Refused before this side's hello: a device that is not trusted learns nothing but why.
                if case .deviceNotTrusted = problem, connection.role == .acceptor, let untrusted = tls.authentication.untrusted,
                    let fingerprint = presented.recorded
                {
                    let hello: Hello? = if case .hello(let helloFrame) = frame { Hello(readingAtMost: helloFrame.body) } else { nil }
                    let request = DeviceRequest(
                        fingerprint: fingerprint, name: hello?.name, peerID: hello.flatMap { PeerID(rawValue: $0.peerID) },
                        address: connection.remoteAddress, host: connection.remoteHost ?? connection.remoteAddress, code: PairingCode(tls.authentication.identity.fingerprint, fingerprint)
                    )
                    if let message = untrusted(request) { problem = .pairingRequested(message: message) }
                }
                refuse(connection, problem)
                throw problem
            }
            firstFrame = false

            var running = machine ?? makeHandshake(for: connection)
            let action = running.receive(frame)
            machine = running
            switch action {
            case .send(let frames):
                if let hello = running.pendingPeerHello { connection.expectedPeer = PeerID(rawValue: hello.peerID) }
                write(frames, on: connection)
            case .fail(let error, let notifyPeer):
                if notifyPeer { refuse(connection, error) }
                if case .refusedByPeer(.pairingRequested, let message) = error, case .device(let tls, let presented) = connection.authentication,
                    let other = presented.recorded
                {
                    let code = PairingCode(tls.authentication.identity.fingerprint, other)
                    tls.authentication.pairingRequested?(code, message)
                    throw HandshakeError.pairingRequestedByPeer(code: "\(code)", message: message)
                }
                throw error
            case .established(let outcome, let frames):
                // Registered before the frames that complete the remote side's handshake go out: when its
                // `connect` returns, this side already lists it.
                connection.outbound.hold()
                let established = Result { try establish(outcome, on: connection, localID: localID, logger: logger) }
                write(frames, on: connection, thenSealWith: running.frameProtection)
                connection.outbound.release()
                return try established.get()
            }
        }
    }

    /// Registers the peer of a completed handshake.
    private func establish(
        _ outcome: HandshakeStateMachine.Outcome, on connection: PeerConnection, localID: PeerID, logger: Logger
    ) throws -> Peer {
        let channel = connection.channel
        let hello = outcome.hello
        let id = PeerID(rawValue: hello.peerID)!
        var peer = Peer(
            id: id, name: hello.name, address: connection.remoteAddress,
            protocolVersion: outcome.version, capabilities: hello.capabilities, accepts: hello.accepts,
            connectionID: connection.id
        )
        if case .device(_, let presented) = connection.authentication { peer.device = presented.recorded }
        if id == localID {
            let error = HandshakeError.refusedByPeer(code: .connectedToSelf, message: "connected to itself")
            connection.outbound.finish(
                sending: .close(CloseFrame(code: .connectedToSelf, message: "this is the same Parley node (\(id))")),
                then: .close, timeout: .seconds(1), reason: error
            )
            throw error
        }
        if hello.capabilities.contains("heartbeat") {
            channel.triggerUserOutboundEvent(HeartbeatHandler.Start(), promise: nil)
        }
        connection.peer = peer
        if connection.role == .acceptor { admission.established(channel) }
        try register(connection, peer: peer, dialer: connection.role == .dialer ? localID : id, logger: logger)
        channel.closeFuture.whenComplete { _ in self.connectionEnded(connection) }
        if case .device(let tls, _) = connection.authentication, let device = peer.device {
            // Trust asked again once registered: a device taken back while its handshake ran is either seen here or
            // found in the registry by `disconnect(device:message:)`, which runs after the trust is withdrawn.
            guard tls.authentication.trusts(device) else {
                let message = "this device is not trusted by \(configuration.name) any more"
                _ = disconnect(device: device, message: message)
                throw HandshakeError.deviceNotTrusted(fingerprint: device.short)
            }
            // Only a peer that got in: one refused as connected-to-self or as a claim of a connected id is not one.
            tls.authentication.established?(peer, device)
        }
        return peer
    }

    /// Tells the remote side why the handshake failed, then closes.
    private func refuse(_ connection: PeerConnection, _ error: HandshakeError) {
        refuse(connection, code: error.closeCode, error)
    }

    /// Says `error` to the remote side in a close frame with `code`, then closes.
    private func refuse(_ connection: PeerConnection, code: ErrorCode, _ error: any Error & CustomStringConvertible) {
        connection.outbound.finish(
            sending: .close(CloseFrame(code: code, message: error.description)), then: .close, timeout: .seconds(1), reason: error
        )
    }

    /// Puts the peer in the registry; reports it, or retires whichever connection is the duplicate.
    private func register(_ connection: PeerConnection, peer: Peer, dialer: PeerID, logger: Logger) throws {
        let host = connection.remoteHost
        switch registry.register(connection, peer: peer, dialer: dialer, host: host) {
        case .connected:
            logger.log(level: peer.isLocal ? .debug : .info, "peer connected", metadata: ["version": "\(peer.protocolVersion)"])
        case .handedOver:
            logger.debug("peer's duplicate connection resolved; it continues on this one")
        case .replaced(let old):
            logger.info("peer reconnected; the older connection is closed as a duplicate")
            retire(old)
        case .duplicate:
            logger.info("peer already connected; this connection is closed as a duplicate")
            retire(connection)
            // Kept, but from another address than this newcomer: possibly dead since that peer moved.
            if let kept = registry.connection(for: peer.id), let host, kept.remoteHost != host { probe(kept) }
        case .claimRefused(let connectedFrom):
            // Anyone can write any id in an open-mode hello: the connection that holds the id keeps it. Logged
            // (throttled) as a failed handshake by the caller.
            let error = HandshakeError.peerIDInUse(peer.id.rawValue, connectedFrom: connectedFrom)
            connection.peer = nil
            refuse(connection, error)
            // The holder may be that peer's old connection, dead since the peer's address changed: ask it now. A
            // live holder answers and keeps the id; a dead one is closed, and the peer's next attempt gets in.
            if let holder = registry.connection(for: peer.id) { probe(holder) }
            throw error
        }
    }

    /// Whether another connection to the same peer is open (perhaps still in its handshake): what a peer that
    /// closed `connection` as a duplicate may have kept. The same peer: the same remote address, or, when the two
    /// connections run over different addresses (one side dialled IPv4, the other IPv6), the same expected id.
    func hasOtherConnection(like connection: PeerConnection) -> Bool {
        let host = connection.remoteHost
        let peer = connection.peer?.id
        return registry.connections.contains { other in
            other !== connection && (other.remoteHost == host || (peer != nil && other.expectedPeer == peer))
        }
    }

    /// Asks `connection`'s peer to show it is alive within a heartbeat interval (at least a second), or be closed.
    private func probe(_ connection: PeerConnection) {
        let window = TimeAmount(max(configuration.heartbeatInterval, .seconds(1)))
        connection.channel.triggerUserOutboundEvent(HeartbeatHandler.Probe(within: window), promise: nil)
    }

    /// Closes a duplicate connection without losing what is in flight: say so, stop sending, keep reading
    /// until the peer closes its side too.
    private func retire(_ connection: PeerConnection) {
        connection.outbound.finish(
            sending: .close(CloseFrame(code: .duplicateConnection, message: "another connection to this peer is kept")),
            then: .halfClose, timeout: configuration.shutdownFlushTimeout,
            reason: TransceiverError.connectionClosed(connection.peer?.id ?? PeerID(), reason: .duplicate)
        )
    }
}
