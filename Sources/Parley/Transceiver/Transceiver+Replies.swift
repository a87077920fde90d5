import Foundation
import Logging
import NIOCore
import NIOPosix
import ParleyDiscovery
import ParleySecurity
import ParleyWire
import Synchronization

extension Transceiver {
    /// Sends a reply. It waits for room like any send, but not forever: while it waits this connection's
    /// handlers (and so its reading) stand still, and two peers flooding each other could otherwise wait on each
    /// other for good. A peer that takes nothing for ``TransceiverConfiguration/slowPeerTimeout`` is dropped as too
    /// slow.
    ///
    /// It goes on the peer's active connection. That is the one the request came on, unless that one was retired
    /// as a duplicate meanwhile; the requester then listens on the one that was kept.
    func sendOrLog(_ frame: Frame, on requestConnection: PeerConnection, logger: Logger) async {
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
    ///
    /// `requester` is the connected peer this request is made for, when it is relayed (parleyd forwarding a local
    /// tool's request): it fails with ``TransceiverError/connectionClosed(_:reason:)`` as soon as that peer stops
    /// sending (said goodbye, or went), instead of waiting out `timeout` for an answer no one will read.
    public func requestRaw(
        typeName: String, payload: ByteBuffer, from peer: PeerID, timeout: Duration = .seconds(5), for requester: PeerID? = nil
    ) async throws -> InboundMessage {
        try checkSendable(typeName: typeName, payload: payload)
        let connection = try connection(to: peer)
        let header = MessageHeader(typeName: typeName, id: connection.makeMessageID(), flags: .expectsReply)
        let reply: PeerConnection.Reply
        do {
            let requesterConnection = try requester.map { try self.connection(to: $0) }
            reply = try await connection.request(header, payload: payload, to: peer, timeout: timeout, for: requesterConnection)
        } catch is TimeoutExpired {
            throw TransceiverError.replyTimedOut(type: typeName, peer: peer, timeout: timeout)
        }
        counters.sent(1, payloadBytes: payload.readableBytes)
        switch reply {
        case .message(let message): return message
        case .error(let error): throw TransceiverError.remoteError(code: error.code, message: error.message)
        }
    }
}
