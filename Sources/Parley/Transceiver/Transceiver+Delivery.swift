import Foundation
import Logging
import NIOCore
import NIOPosix
import ParleyDiscovery
import ParleySecurity
import ParleyWire
import Synchronization

extension Transceiver {
    /// Reads frames until the connection ends and hands each message to its handler, in order. Replies never
    /// get here: ``ReplyResolver`` completes them on the event loop. Returns why the connection ended.
    func exchange(
        over connection: PeerConnection,
        peer: Peer,
        frames: inout FrameReader,
        logger: Logger
    ) async -> DisconnectReason {
        var endReason = DisconnectReason.peerClosed
        var protocolError: (ErrorCode, String)?
        var lookup = Router.Lookup()
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
                    let handler = lookup.handler(for: inbound, from: peer, in: router)
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
        if protocolError == nil, endReason == .peerClosed { endReason = endOfStream(on: connection, logger: logger) }
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

    /// Why a connection ended whose stream ended without a close frame. On a sealed connection a peer that leaves
    /// says so in a sealed close, while anyone on the path can end the TCP stream: unless this side had begun to
    /// end the connection (its goodbye is out, and the peer answers by closing without one), that is no goodbye.
    private func endOfStream(on connection: PeerConnection, logger: Logger) -> DisconnectReason {
        guard connection.sharedSecret != nil, connection.endReason == nil, !connection.outbound.isFinishing else { return .peerClosed }
        counters.endsWithoutSealedClose.add(1, ordering: .relaxed)
        logThrottle.warning(
            "sealed connection ended without the peer's sealed close frame; the peer stopped without a goodbye, or the connection was cut on the way",
            to: logger
        )
        return .endedWithoutSealedClose
    }

    /// A peer went past a limit: counted and logged with the limit, then closed like a protocol error.
    func noteLimitExceeded(_ error: ConnectionLimitExceeded, logger: Logger) {
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
}
