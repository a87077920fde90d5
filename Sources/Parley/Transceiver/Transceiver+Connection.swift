import Foundation
import Logging
import NIOCore
import ParleySecurity
import ParleyWire

extension Transceiver {
    /// Serves one connection from handshake to close. Errors end this connection only.
    func serve(_ job: Job) async {
        let channel = job.channel.channel
        let connection = job.channel.connection
        var logger = self.logger
        logger[metadataKey: "remote"] = "\(connection.remoteAddress)"
        guard registry.open(connection) else {
            channel.close(promise: nil)
            job.handshakeDone?.resume(throwing: TransceiverError.notRunning)
            return
        }

        var handshakeResult = job.handshakeDone
        var endReason = DisconnectReason.peerClosed
        do {
            try await job.channel.readThenClose { frames in
                let peer: Peer
                do {
                    peer = try await handshake(connection, machine: job.handshake, frames: &frames, logger: logger)
                } catch {
                    // Leaving this closure closes the channel at once; let a refusal reach the peer first.
                    connection.outbound.finish(sending: nil, then: .close, timeout: .seconds(1), reason: error)
                    try? await channel.closeFuture.get()
                    throw error
                }
                logger[metadataKey: "peer-id"] = "\(peer.id)"
                logger[metadataKey: "peer-name"] = "\(peer.name)"
                handshakeResult?.resume(returning: peer)
                handshakeResult = nil
                endReason = await exchange(over: connection, peer: peer, frames: &frames, logger: logger)
            }
        } catch let error as HandshakeError {
            counters.protocolErrors.add(1, ordering: .relaxed)
            counters.handshakeFailures.add(1, ordering: .relaxed)
            logThrottle.warning("handshake failed; connection closed", metadata: ["reason": "\(error)"], to: logger)
            handshakeResult?.resume(throwing: TransceiverError.handshakeFailed(job.endpoint, error))
            handshakeResult = nil
            endReason = .handshakeFailed(error.description)
        } catch {
            endReason = reason(for: error)
            logger.debug("connection ended", metadata: ["reason": "\(endReason)"])
        }
        handshakeResult?.resume(
            throwing: TransceiverError.connectFailed(job.endpoint ?? Endpoint(host: "?", port: 0), underlying: .closed)
        )

        connection.noteEnd(endReason)
        connectionEnded(connection)
        if let peer = connection.peer {
            // A local tool (parleyctl) connects for every command: its comings and goings are not news.
            logger.log(
                level: peer.isLocal ? .debug : .info, "peer connection closed",
                metadata: ["reason": "\(connection.endReason ?? endReason)"]
            )
        }
    }

    /// Everything that follows the end of a connection: pending requests fail, sends fail, the peer is reported
    /// gone (if this was its active connection). Runs as soon as the channel closes — even while one of its
    /// handlers is still busy — and again when its task ends; only the first call does anything.
    func connectionEnded(_ connection: PeerConnection) {
        let reason = connection.endReason ?? .peerClosed
        let error = TransceiverError.connectionClosed(connection.peer?.id ?? PeerID(), reason: reason)
        connection.outbound.close(error)
        // A retired duplicate leaves its requests waiting: their replies come on the connection that was kept.
        switch registry.remove(connection, peer: connection.peer?.id, reason: reason, handedOver: connection.isHandedOver) {
        case .gone(let gone):
            requests.failAll(to: gone.id, with: error)
        case .handover(let peer):
            // The kept connection is still in its handshake here; if it has not registered by the time a
            // handshake may take, the peer is gone after all.
            connection.channel.eventLoop.scheduleTask(in: TimeAmount(configuration.handshakeTimeout)) {
                if let gone = self.registry.expireHandover(of: peer.id, reason: reason) {
                    self.requests.failAll(to: gone.id, with: error)
                }
            }
        case nil:
            break
        }
    }

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
    private func handshake(
        _ connection: PeerConnection,
        machine started: HandshakeStateMachine?,
        frames: inout FrameReader,
        logger: Logger
    ) async throws -> Peer {
        var machine = started
        let localID = localPeerID!
        while true {
            let next: Frame?
            do {
                next = try await frames.next()
            } catch let error as HandshakeError {
                refuse(connection, error)
                throw error
            } catch let error as WireError {
                refuse(connection, .unexpectedFrame("malformed frame (\(error))"))
                throw HandshakeError.unexpectedFrame("malformed frame (\(error))")
            } catch let error as ConnectionLimitExceeded {
                // A limit met before the hello is complete (a hello that stopped arriving): said as after it.
                noteLimitExceeded(error, logger: logger)
                refuse(connection, code: error.closeCode, error)
                throw error
            }
            guard let frame = next else {
                throw HandshakeError.refusedByPeer(code: .goingAway, message: "closed before the handshake")
            }

            var running = machine ?? makeHandshake(for: connection)
            let action = running.receive(frame)
            machine = running
            switch action {
            case .send(let frames):
                if let hello = running.pendingPeerHello { connection.expectedPeer = PeerID(rawValue: hello.peerID) }
                write(frames, on: connection)
            case .fail(let error, let notifyPeer):
                if notifyPeer { refuse(connection, error) }
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
        let peer = Peer(
            id: id, name: hello.name, address: connection.remoteAddress,
            protocolVersion: outcome.version, capabilities: hello.capabilities, accepts: hello.accepts,
            connectionID: connection.id
        )
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
    private func hasOtherConnection(like connection: PeerConnection) -> Bool {
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

    /// Reads frames until the connection ends and hands each message to its handler, in order. Replies never
    /// get here: ``ReplyResolver`` completes them on the event loop. Returns why the connection ended.
    private func exchange(
        over connection: PeerConnection,
        peer: Peer,
        frames: inout FrameReader,
        logger: Logger
    ) async -> DisconnectReason {
        var endReason = DisconnectReason.peerClosed
        var protocolError: (ErrorCode, String)?
        do {
            reading: while let frame = try await frames.next() {
                switch frame {
                case .message(let message):
                    let inbound = InboundMessage(header: message.header, payload: message.payload)
                    if let replyTo = message.header.inReplyTo {
                        // As above: a reply that slipped past ReplyResolver during the handshake.
                        if !connection.resolve(replyTo, with: .success(.message(inbound))) {
                            counters.lateReplies.add(1, ordering: .relaxed)
                        }
                        continue
                    }
                    // Looked up once, here: the dispatch below and the run's messages use the same handler.
                    let handler = router.handler(for: inbound, from: peer)
                    guard !inbound.expectsReply, let immediately = handler?.immediately else {
                        await deliver(inbound, to: handler, from: peer, on: connection, logger: logger)
                        continue
                    }
                    // The one-way messages of the same type that arrived with it, for its router to take together.
                    var run = [inbound]
                    while let next = frames.nextBuffered({ Self.sameRun($0, as: inbound) }) { run.append(next) }
                    await deliver(run, to: immediately, otherwise: handler, from: peer, on: connection, logger: logger)
                case .close(let close):
                    // Handed over only if there is a connection it can be handed over to: after this node's address
                    // changed, the other side may keep its old connection (dead, unknown to it yet), and waiting
                    // for that one to register would only delay the redial.
                    if close.code == .duplicateConnection, hasOtherConnection(like: connection) { connection.noteHandedOver() }
                    endReason = .peerSaidGoodbye(close.code, message: close.message)
                    // Nothing more will come; finish our side once our queue is written.
                    break reading
                case .errorReply(let reply):
                    // Normally resolved by ReplyResolver; this one arrived as the handshake was completing.
                    if !connection.resolve(reply.inReplyTo, with: .success(.error(reply))) {
                        counters.lateReplies.add(1, ordering: .relaxed)
                    }
                case .ping, .pong:
                    break  // consumed by HeartbeatHandler once the handshake is done
                case .hello, .auth, .sealed:
                    protocolError = (.protocolViolation, "unexpected \(HandshakeStateMachine.name(of: frame)) frame after the handshake")
                    break reading
                }
            }
        } catch let error as WireError {
            protocolError = (error.closeCode, error.description)
        } catch let error as ConnectionLimitExceeded {
            noteLimitExceeded(error, logger: logger)
            protocolError = (error.closeCode, error.description)
        } catch {
            endReason = reason(for: error)
        }
        if let (code, text) = protocolError {
            if code != .idleTimeout && code != .rateLimited {
                counters.protocolErrors.add(1, ordering: .relaxed)
                logThrottle.warning("protocol error; connection closed", metadata: ["reason": "\(text)"], to: logger)
            }
            endReason = .closedByUs(code, message: text)
            connection.noteEnd(endReason)
            connection.outbound.finish(
                sending: .close(CloseFrame(code: code, message: text)),
                then: .close, timeout: .seconds(1),
                reason: TransceiverError.connectionClosed(peer.id, reason: endReason)
            )
        } else {
            connection.noteEnd(endReason)
            connection.outbound.finish(
                sending: nil, then: .close, timeout: configuration.shutdownFlushTimeout,
                reason: TransceiverError.connectionClosed(peer.id, reason: endReason)
            )
        }
        try? await connection.channel.closeFuture.get()
        return endReason
    }

    /// A peer went past a limit: counted and logged with the limit, then closed like a protocol error.
    private func noteLimitExceeded(_ error: ConnectionLimitExceeded, logger: Logger) {
        switch error {
        case .idle: counters.idleConnectionsClosed.add(1, ordering: .relaxed)
        case .rate: counters.rateLimitedConnections.add(1, ordering: .relaxed)
        case .memoryBudget: break  // counted, and logged with the connection's holding, by the budget
        case .stalledFrame: counters.stalledFrames.add(1, ordering: .relaxed)
        }
        logThrottle.warning(
            "connection limit exceeded; connection closed", metadata: ["reason": "\(error)", "limit": "\(error.limit)"], to: logger
        )
    }

    /// `frame` as a message of `first`'s run: one-way, of the same type, and not a reply.
    private static func sameRun(_ frame: Frame, as first: InboundMessage) -> InboundMessage? {
        guard case .message(let message) = frame, message.header.inReplyTo == nil, !message.header.flags.contains(.expectsReply),
            message.header.typeName == first.typeName
        else { return nil }
        return InboundMessage(header: message.header, payload: message.payload)
    }

    /// Hands one message to its handler. While draining, a message that arrives after the goodbye is not handled;
    /// the handler already running when draining began finishes, its reply goes out, and then the goodbye.
    private func deliver(
        _ message: InboundMessage, to handler: Router.Handler?, from peer: Peer, on connection: PeerConnection, logger: Logger
    ) async {
        count(received: CollectionOfOne(message), on: connection)
        guard connection.handlerBegins() else { return }
        await handle(message, with: handler, from: peer, on: connection, logger: logger)
        if connection.handlerEnds() { finishForShutdown(connection) }
    }

    /// Hands a run of one-way messages to a router's immediate part, and each message it does not take to the
    /// router's async part (`handler`), in order; as one handler for draining (the run arrived together).
    private func deliver(
        _ run: [InboundMessage], to immediately: Router.ImmediateRouting, otherwise handler: Router.Handler?, from peer: Peer,
        on connection: PeerConnection, logger: Logger
    ) async {
        count(received: run, on: connection)
        guard connection.handlerBegins() else { return }
        var rest = run[...]
        while !rest.isEmpty {
            // Clamped: the count comes from the router's code, and a wrong one must not trap the connection.
            rest = rest.dropFirst(min(max(0, immediately(rest, peer)), rest.count))
            guard let next = rest.popFirst() else { break }
            await handle(next, with: handler, from: peer, on: connection, logger: logger)
        }
        if connection.handlerEnds() { finishForShutdown(connection) }
    }

    private func count(received messages: some Collection<InboundMessage>, on connection: PeerConnection) {
        connection.messagesIn.add(messages.count, ordering: .relaxed)
        counters.received(messages.count, payloadBytes: messages.reduce(0) { $0 + $1.payload.readableBytes })
    }

    /// Dispatches one message to its handler (nil: none takes it) and answers requests.
    private func handle(
        _ message: InboundMessage, with handler: Router.Handler?, from peer: Peer, on connection: PeerConnection, logger: Logger
    ) async {
        let outcome = await router.dispatch(message, to: handler, from: peer)
        let expectsReply = message.expectsReply
        switch outcome {
        case .handled:
            return
        case .reply(let typeName, let payload):
            guard expectsReply else { return }
            do {
                try checkSendable(typeName: typeName, payload: payload)
            } catch {
                counters.handlerFailures.add(1, ordering: .relaxed)
                logger.warning("reply not sent", metadata: ["type": "\(message.typeName)", "reason": "\(error)"])
                let reply = ErrorReplyFrame(inReplyTo: message.header.id, code: .handlerFailed, message: "reply not sent: \(error)")
                await sendOrLog(.errorReply(reply), on: connection, logger: logger)
                return
            }
            let header = MessageHeader(typeName: typeName, id: connection.makeMessageID(), inReplyTo: message.header.id)
            await sendOrLog(.message(MessageFrame(header: header, payload: payload)), on: connection, logger: logger)
        case .failed(let code, let text):
            switch code {
            case .unknownType: counters.unknownType.add(1, ordering: .relaxed)
            case .undecodablePayload: counters.undecodable.add(1, ordering: .relaxed)
            case .handlerFailed: counters.handlerFailures.add(1, ordering: .relaxed)
            default: break
            }
            if peer.isLocal {
                // A local tool's request refused (a typo in a parleyctl command): the person sees the error there.
                logger.debug("request of a local client refused", metadata: ["type": "\(message.typeName)", "code": "\(code)", "reason": "\(text)"])
            } else {
                logThrottle.warning(
                    "message not handled",
                    metadata: ["type": "\(message.typeName)", "code": "\(code)", "reason": "\(text)"],
                    to: logger
                )
            }
            if expectsReply {
                let reply = ErrorReplyFrame(inReplyTo: message.header.id, code: code, message: text)
                await sendOrLog(.errorReply(reply), on: connection, logger: logger)
            }
        }
    }

    /// Sends a reply. It waits for room like any send, but not forever: while it waits this connection's
    /// handlers (and so its reading) stand still, and two peers flooding each other could otherwise wait on each
    /// other for good. A peer that takes nothing for ``TransceiverConfiguration/slowPeerTimeout`` is dropped as too
    /// slow.
    ///
    /// It goes on the peer's active connection. That is the one the request came on, unless that one was retired
    /// as a duplicate meanwhile; the requester then listens on the one that was kept.
    private func sendOrLog(_ frame: Frame, on requestConnection: PeerConnection, logger: Logger) async {
        let connection = requestConnection.peer.flatMap { registry.connection(for: $0.id) } ?? requestConnection
        do {
            // The common case needs no waiting, and so no timer: `send` queues at once when there is room.
            try await connection.send(frame, stallTimeout: configuration.slowPeerTimeout)
            // A reply's body: its payload and its few bytes of header.
            counters.sent(1, payloadBytes: frame.bodySize)
        } catch is OutboundQueueStalled {
            if let peer = connection.peer { dropSlowPeer(peer.id, connection) }
        } catch {
            logger.debug("could not send reply", metadata: ["error": "\(error)"])
        }
    }

    func reason(for error: any Error) -> DisconnectReason {
        if let error = error as? ChannelError, error == .eof { return .peerClosed }
        if let error = error as? HeartbeatTimeout { return .silent(.nanoseconds(error.silence.nanoseconds)) }
        if let error = error as? IOError { return .transportFailed("I/O error: \(error.description)") }
        return .transportFailed(String(describing: error))
    }
}
