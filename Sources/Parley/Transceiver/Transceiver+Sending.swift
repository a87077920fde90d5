import Foundation
import Logging
import NIOCore
import NIOPosix
import ParleyDiscovery
import ParleySecurity
import ParleyWire
import Synchronization

extension Transceiver {
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
        // First, queued at once wherever there is room (the common case: no task, no waiting); then, for the peers
        // whose queues are full, one task each waits for room, so that one slow reader holds up no other.
        var delivered: [PeerID] = []
        var waiting: [(PeerID, PeerConnection, Frame)] = []
        for id in peers {
            guard let connection = registry.connection(for: id) else { continue }
            let frame = connection.message(typeName, payload)
            switch Result(catching: { try connection.sendIfRoom(CollectionOfOne(frame)) }) {
            case .success(true):
                counters.sent(1, payloadBytes: payload.readableBytes)
                delivered.append(id)
            case .success(false): waiting.append((id, connection, frame))
            case .failure: continue  // closed meanwhile: not reached
            }
        }
        guard !waiting.isEmpty else { return delivered }
        let timeout = configuration.slowPeerTimeout
        return await withTaskGroup(of: PeerID?.self) { group in
            for (peer, connection, frame) in waiting {
                group.addTask {
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
            var reached = delivered
            for await queued in group { if let queued { reached.append(queued) } }
            return reached
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
        let frames = payloads.map { connection.message(typeName, $0) }
        guard try connection.sendIfRoom(frames) else { return 0 }
        counters.sent(frames.count, payloadBytes: payloads.reduce(0) { $0 + $1.readableBytes })
        return frames.count
    }

    /// ``sendRawIfRoom(typeName:payloads:to:)`` to several peers, all or none: when every one of `peers` still
    /// connected has room, queues all of `payloads` to each (past the watermark, if another sender filled a queue a
    /// moment later) and returns the peers reached; when one has none, queues nothing and returns nil (the caller
    /// then waits, as ``broadcastRaw(typeName:payload:among:)`` does). For a relay that must not deliver a run of
    /// messages to some of its targets only.
    public func broadcastRawIfRoom(typeName: String, payloads: [ByteBuffer], among peers: [PeerID]) throws -> [PeerID]? {
        for payload in payloads { try checkSendable(typeName: typeName, payload: payload) }
        let targets = peers.compactMap { id in registry.connection(for: id).map { (id, $0) } }
        guard targets.allSatisfy({ $0.1.outbound.hasRoom }) else { return nil }
        var reached: [PeerID] = []
        reached.reserveCapacity(targets.count)
        let bytes = payloads.reduce(0) { $0 + $1.readableBytes }
        for (id, connection) in targets {
            let frames = payloads.map { connection.message(typeName, $0) }
            // Closed meanwhile (or its share of the budget gone): not reached, as in a broadcast.
            guard (try? connection.sendIfRoom(frames, evenIfFull: true)) == true else { continue }
            counters.sent(frames.count, payloadBytes: bytes)
            reached.append(id)
        }
        return reached
    }

    @inline(__always)  // into the public sendRaw: an async call costs a frame allocation, on every message sent
    private func sendRaw(
        typeName: String, payload: ByteBuffer, on connection: PeerConnection, peer: PeerID, stallTimeout: Duration?
    ) async throws {
        do {
            try await connection.send(connection.message(typeName, payload), stallTimeout: stallTimeout)
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

    func encodePayload<T: Encodable>(_ value: T) throws -> ByteBuffer {
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

    func connection(to peer: PeerID) throws -> PeerConnection {
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
