import Foundation
import NIOCore
import NIOPosix
import ParleyWire

extension Transceiver {
    // MARK: - Handlers

    /// Handles every message of type `T`. One handler per type; registering again replaces it.
    /// Messages from one peer reach handlers one at a time, in the order they were sent.
    public func receive<T: Decodable & Sendable>(
        _ type: T.Type,
        handler: @escaping @Sendable (T, Peer) async throws -> Void
    ) {
        router.register(messageTypeName(of: T.self), .receive { message, peer in
            try await handler(PayloadCoding.decode(T.self, from: message), peer)
        })
    }

    /// Answers requests of type `T`: the value `handler` returns goes back to the requester as the reply.
    /// If `handler` throws, the requester receives an error naming the failure.
    /// `localOnly`: only local clients (the control socket) may ask; to a network peer the type does not exist —
    /// its hello does not list it, and a request gets `unknown-type`.
    /// `codingOn`: decode the request and encode the reply on this pool instead of the connection's event loop —
    /// for requests or replies of megabytes (a state, a screenshot, a piece of an export), whose JSON coding would
    /// hold up every other connection of that loop.
    public func respond<T: Decodable & Sendable, Reply: Encodable & Sendable>(
        to type: T.Type,
        localOnly: Bool = false,
        codingOn pool: NIOThreadPool? = nil,
        handler: @escaping @Sendable (T, Peer) async throws -> Reply
    ) {
        let respond = Router.Handler.respond { message, peer in
            let request = try await Self.coding(on: pool) { try PayloadCoding.decode(T.self, from: message) }
            let reply = try await handler(request, peer)
            let payload = try await Self.coding(on: pool) { try PayloadCoding.encode(reply, allocator: ByteBufferAllocator()) }
            return (messageTypeName(of: Reply.self), payload)
        }
        router.register(messageTypeName(of: T.self), respond, localOnly: localOnly)
    }

    private static func coding<Value: Sendable>(on pool: NIOThreadPool?, _ body: @escaping @Sendable () throws -> Value) async throws -> Value {
        guard let pool else { return try body() }
        return try await pool.runIfActive(body)
    }

    /// Handles messages of `typeName` without decoding them: for routers, bridges and tools that forward payloads.
    public func receiveRaw(typeName: String, handler: @escaping @Sendable (InboundMessage, Peer) async throws -> Void) {
        router.register(typeName, .receive(handler))
    }

    /// Answers requests of `typeName` with a raw reply (type name and payload).
    public func respondRaw(
        to typeName: String,
        handler: @escaping @Sendable (InboundMessage, Peer) async throws -> (typeName: String, payload: ByteBuffer)
    ) {
        router.register(typeName, .respond { message, peer in try await handler(message, peer) })
    }

    /// Handles every message whose type has no handler of its own, undecoded — for tools that show or forward
    /// whatever arrives. Requests reaching it are answered with `no-responder`. Pass `nil` to remove it.
    public func receiveUnhandled(_ handler: (@Sendable (InboundMessage, Peer) async throws -> Void)?) {
        router.registerFallback(handler.map { Router.Handler.receive($0) })
    }

    /// Like ``receiveUnhandled(_:)``, for routers: a request is answered with what `handler` returns (a type name
    /// and an undecoded payload, e.g. the reply it got by forwarding the request); `nil` answers nothing. Throw
    /// ``UnhandledMessage`` when nobody takes the message: it is then an unknown type to the sender.
    public func routeUnhandled(
        _ handler: @escaping @Sendable (InboundMessage, Peer) async throws -> (typeName: String, payload: ByteBuffer)?
    ) {
        // Stored as given: a wrapping closure would be one more async call for every message routed.
        router.registerFallback(.route(immediately: nil, handler))
    }

    /// ``routeUnhandled(_:)`` with a first try that does not wait, for routers that forward streams of messages.
    /// `immediately` is offered each run of consecutive one-way messages of one type that arrived together on one
    /// connection (often a whole socket read of them), on the connection's event loop, and returns how many of
    /// them, from the first, it dealt with entirely — for example, queued with
    /// ``sendRawIfRoom(typeName:payloads:to:)``. The first message it does not take goes to `handler`, with every
    /// rule of ``routeUnhandled(_:)``, and the rest of the run is offered to `immediately` again after it; the
    /// connection's messages are handled in order throughout. Requests only ever go to `handler`. `immediately`
    /// must not block. A run taken at once costs no async call, and one lookup of its route for all its messages.
    public func routeUnhandled(
        immediately: @escaping @Sendable (_ run: ArraySlice<InboundMessage>, _ from: Peer) -> Int,
        otherwise handler: @escaping @Sendable (InboundMessage, Peer) async throws -> (typeName: String, payload: ByteBuffer)?
    ) {
        router.registerFallback(.route(immediately: immediately, handler))
    }

    /// Removes the handler for `typeName`; later messages of that type are counted as unknown.
    public func removeHandler(for typeName: String) {
        router.unregister(typeName)
    }

    // MARK: - Sending

    /// Sends `value` to every connected Parley peer and returns how many peers it was queued for.
    ///
    /// Backpressure: while a peer's queue is full the broadcast waits for it; a peer that takes nothing of its
    /// queue for ``TransceiverConfiguration/slowPeerTimeout`` is disconnected as too slow, so one stalled reader
    /// cannot hold up the rest (one that reads slowly only slows the broadcast down).
    @discardableResult
    public func broadcast<T: Encodable>(_ value: T) async throws -> Int {
        let payload = try encodePayload(value)
        return try await broadcastRaw(typeName: messageTypeName(of: T.self), payload: payload)
    }

    /// ``broadcast(_:)`` for an already-encoded payload.
    @discardableResult
    public func broadcastRaw(typeName: String, payload: ByteBuffer) async throws -> Int {
        try await broadcastRaw(typeName: typeName, payload: payload, among: registry.peers.map(\.id)).count
    }

    /// ``broadcastRaw(typeName:payload:)`` to some of the connected peers only, with the same backpressure: a peer
    /// whose full queue gives up nothing for ``TransceiverConfiguration/slowPeerTimeout`` is disconnected as too
    /// slow. Returns the peers it was queued for; the others were not connected or were dropped.
    public func broadcastRaw(typeName: String, payload: ByteBuffer, among peers: [PeerID]) async throws -> [PeerID] {
        try checkSendable(typeName: typeName, payload: payload)
        let targets = peers.compactMap { id in registry.connection(for: id).map { (id, $0) } }
        let timeout = configuration.slowPeerTimeout
        return await withTaskGroup(of: PeerID?.self) { group in
            for (peer, connection) in targets {
                group.addTask {
                    let header = MessageHeader(typeName: typeName, id: connection.makeMessageID())
                    let frame = Frame.message(MessageFrame(header: header, payload: payload))
                    do {
                        try await connection.send(frame, stallTimeout: timeout)
                        self.counters.sent(1, payloadBytes: payload.readableBytes)
                        return peer
                    } catch is OutboundQueueStalled {
                        self.dropSlowPeer(peer, connection)
                        return nil
                    } catch {
                        return nil
                    }
                }
            }
            var delivered: [PeerID] = []
            for await queued in group { if let queued { delivered.append(queued) } }
            return delivered
        }
    }

    /// Sends `value` to one peer. Waits while that peer's queue is above its high watermark.
    public func send<T: Encodable>(_ value: T, to peer: Peer) async throws {
        try await send(value, to: peer.id)
    }

    /// Sends `value` to the peer with this id; `stallTimeout` as for ``sendRaw(typeName:payload:to:stallTimeout:)``.
    public func send<T: Encodable>(_ value: T, to peer: PeerID, stallTimeout: Duration? = nil) async throws {
        try await sendRaw(typeName: messageTypeName(of: T.self), payload: encodePayload(value), to: peer, stallTimeout: stallTimeout)
    }

    /// Sends an already-encoded payload under `typeName` to one peer. Waits while that peer's queue is above its
    /// high watermark; with a `stallTimeout`, throws ``TransceiverError/peerNotReading(_:stalledFor:)`` if nothing
    /// of the queue leaves for that long (routers use it so that one stalled reader cannot hold up the others).
    public func sendRaw(typeName: String, payload: ByteBuffer, to peer: PeerID, stallTimeout: Duration? = nil) async throws {
        try checkSendable(typeName: typeName, payload: payload)
        try await sendRaw(typeName: typeName, payload: payload, on: try connection(to: peer), peer: peer, stallTimeout: stallTimeout)
    }

    /// Queues already-encoded payloads, in order, each as a `typeName` message for `peer`, if its queue has room,
    /// without waiting: all of them, or none when the queue is full (above its high watermark, which all of them
    /// together may then go past; ``sendRaw(typeName:payload:to:stallTimeout:)`` waits for room instead). Returns
    /// how many were queued. Throws as that does otherwise: the peer not connected, a payload too large (then
    /// nothing is queued).
    public func sendRawIfRoom(typeName: String, payloads: [ByteBuffer], to peer: PeerID) throws -> Int {
        for payload in payloads { try checkSendable(typeName: typeName, payload: payload) }
        let connection = try connection(to: peer)
        let frames = payloads.map { payload in
            Frame.message(MessageFrame(header: MessageHeader(typeName: typeName, id: connection.makeMessageID()), payload: payload))
        }
        guard try connection.sendIfRoom(frames) else { return 0 }
        counters.sent(frames.count, payloadBytes: payloads.reduce(0) { $0 + $1.readableBytes })
        return frames.count
    }

    @inline(__always)  // into the public sendRaw: an async call costs a frame allocation, on every message sent
    private func sendRaw(
        typeName: String, payload: ByteBuffer, on connection: PeerConnection, peer: PeerID, stallTimeout: Duration?
    ) async throws {
        let header = MessageHeader(typeName: typeName, id: connection.makeMessageID())
        do {
            try await connection.send(.message(MessageFrame(header: header, payload: payload)), stallTimeout: stallTimeout)
        } catch is OutboundQueueStalled {
            throw TransceiverError.peerNotReading(peer, stalledFor: stallTimeout ?? .zero)
        }
        counters.sent(1, payloadBytes: payload.readableBytes)
    }

    /// Sends an already-encoded payload to `peer` on the very connection `peer` was handed out for: if that
    /// connection has ended, even if the same peer id is connected again meanwhile, it throws
    /// ``TransceiverError/peerNotConnected(_:)``. For what belongs to one connection (a debugger session's state).
    public func sendRaw(typeName: String, payload: ByteBuffer, toConnectionOf peer: Peer) async throws {
        try checkSendable(typeName: typeName, payload: payload)
        let connection = try connection(to: peer.id)
        guard connection.id == peer.connectionID else { throw TransceiverError.peerNotConnected(peer.id) }
        try await sendRaw(typeName: typeName, payload: payload, on: connection, peer: peer.id, stallTimeout: nil)
    }

    /// Sends `value` and waits up to `timeout` for the peer's reply, decoded as `Reply`.
    public func request<T: Encodable, Reply: Decodable>(
        _ value: T,
        from peer: Peer,
        expecting replyType: Reply.Type,
        timeout: Duration = .seconds(5)
    ) async throws -> Reply {
        let reply = try await requestRaw(
            typeName: messageTypeName(of: T.self), payload: encodePayload(value), from: peer.id, timeout: timeout
        )
        let expected = messageTypeName(of: Reply.self)
        guard reply.typeName == expected else {
            throw TransceiverError.unexpectedReply(expected: expected, received: reply.typeName, underlying: nil)
        }
        do {
            return try PayloadCoding.decode(Reply.self, from: reply)
        } catch let error as PayloadDecodingError {
            throw TransceiverError.unexpectedReply(expected: expected, received: reply.typeName, underlying: error.problem)
        }
    }

    /// ``request(_:from:expecting:timeout:)`` for an already-encoded payload; returns the raw reply.
    public func requestRaw(
        typeName: String, payload: ByteBuffer, from peer: PeerID, timeout: Duration = .seconds(5)
    ) async throws -> InboundMessage {
        try checkSendable(typeName: typeName, payload: payload)
        let connection = try connection(to: peer)
        let header = MessageHeader(typeName: typeName, id: connection.makeMessageID(), flags: .expectsReply)
        let reply: PeerConnection.Reply
        do {
            reply = try await connection.request(header, payload: payload, to: peer, timeout: timeout)
        } catch is TimeoutExpired {
            throw TransceiverError.replyTimedOut(type: typeName, peer: peer, timeout: timeout)
        }
        counters.sent(1, payloadBytes: payload.readableBytes)
        switch reply {
        case .message(let message): return message
        case .error(let error): throw TransceiverError.remoteError(code: error.code, message: error.message)
        }
    }

    // MARK: - Helpers

    private func encodePayload<T: Encodable>(_ value: T) throws -> ByteBuffer {
        try PayloadCoding.encode(value, allocator: ByteBufferAllocator())
    }

    /// Refuses, before anything is queued, a message the peer would have to reject: a type name the protocol
    /// cannot carry, or a frame above the configured maximum.
    func checkSendable(typeName: String, payload: ByteBuffer) throws {
        let nameLength = typeName.utf8.count
        guard (1...FrameLayout.maximumTypeNameLength).contains(nameLength) else {
            throw TransceiverError.invalidTypeName(typeName)
        }
        let size = FrameLayout.messageFixedHeaderSize + nameLength + payload.readableBytes
        guard size <= configuration.maximumFrameSize else {
            throw TransceiverError.messageTooLarge(type: typeName, size: size, maximum: configuration.maximumFrameSize)
        }
    }

    private func connection(to peer: PeerID) throws -> PeerConnection {
        guard isRunning else { throw TransceiverError.notRunning }
        guard let connection = registry.connection(for: peer) else { throw TransceiverError.peerNotConnected(peer) }
        return connection
    }

    func dropSlowPeer(_ peer: PeerID, _ connection: PeerConnection) {
        counters.slowPeersDropped.add(1, ordering: .relaxed)
        let reason = DisconnectReason.notReading(stalledFor: configuration.slowPeerTimeout, queueBytes: configuration.outboundHighWatermark)
        logger.warning("disconnecting slow peer", metadata: ["peer-id": "\(peer)", "reason": "\(reason)"])
        connection.noteEnd(reason)
        connection.outbound.finish(
            sending: nil, then: .close, timeout: .seconds(1),
            reason: TransceiverError.connectionClosed(peer, reason: reason)
        )
        connection.channel.close(promise: nil)
    }
}
