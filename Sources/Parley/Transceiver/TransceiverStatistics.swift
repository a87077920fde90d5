import Synchronization

/// Counters a transceiver keeps so that nothing it drops goes unnoticed.
public struct TransceiverStatistics: Sendable, Hashable, Codable {
    public var messagesReceived = 0
    public var messagesSent = 0
    /// Payload bytes of the messages received and sent (frame headers not counted).
    public var payloadBytesReceived = 0
    public var payloadBytesSent = 0
    /// Connections whose handshake failed (bad hello, wrong secret, timeout).
    public var handshakeFailures = 0
    /// Messages whose type has no handler here.
    public var unknownType = 0
    /// Messages whose payload did not decode as the handler's type.
    public var undecodable = 0
    /// Messages whose handler threw.
    public var handlerFailures = 0
    /// Replies that arrived after their request had timed out.
    public var lateReplies = 0
    /// Connections closed because the peer broke the protocol (bad frame, oversized frame, bad handshake).
    public var protocolErrors = 0
    /// Peers disconnected by `broadcast` because their queue stayed full.
    public var slowPeersDropped = 0
    /// Connections refused at accept: too many in all or from one address.
    public var connectionsRefused = 0
    /// Connections closed because no message went either way for the idle timeout.
    public var idleConnectionsClosed = 0
    /// Connections closed because the peer sent faster than the rate limit.
    public var rateLimitedConnections = 0
    /// Connections closed because the memory budget was full and they held the most of it.
    public var budgetEvictions = 0
    /// Connections closed because a frame they had begun stopped arriving.
    public var stalledFrames = 0
    /// Connections that never sent a byte, closed to make room in the pool of pending connections.
    public var silentConnectionsClosed = 0
    /// Sealed connections whose stream ended without the peer's sealed close frame (``DisconnectReason/endedWithoutSealedClose``).
    public var endsWithoutSealedClose = 0
}

/// The live counters behind ``TransceiverStatistics``.
final class StatisticsCounters: Sendable {
    let messagesReceived = Atomic<Int>(0)
    let messagesSent = Atomic<Int>(0)
    let payloadBytesReceived = Atomic<Int>(0)
    let payloadBytesSent = Atomic<Int>(0)
    let handshakeFailures = Atomic<Int>(0)
    let unknownType = Atomic<Int>(0)
    let undecodable = Atomic<Int>(0)
    let handlerFailures = Atomic<Int>(0)
    let lateReplies = Atomic<Int>(0)
    let protocolErrors = Atomic<Int>(0)
    let slowPeersDropped = Atomic<Int>(0)
    let connectionsRefused = Atomic<Int>(0)
    let idleConnectionsClosed = Atomic<Int>(0)
    let rateLimitedConnections = Atomic<Int>(0)
    let budgetEvictions = Atomic<Int>(0)
    let stalledFrames = Atomic<Int>(0)
    let silentConnectionsClosed = Atomic<Int>(0)
    let endsWithoutSealedClose = Atomic<Int>(0)

    /// Counts `messages` sent, carrying `payloadBytes` in all.
    func sent(_ messages: Int, payloadBytes: Int) {
        messagesSent.add(messages, ordering: .relaxed)
        payloadBytesSent.add(payloadBytes, ordering: .relaxed)
    }

    /// Counts `messages` received, carrying `payloadBytes` in all.
    func received(_ messages: Int, payloadBytes: Int) {
        messagesReceived.add(messages, ordering: .relaxed)
        payloadBytesReceived.add(payloadBytes, ordering: .relaxed)
    }

    var snapshot: TransceiverStatistics {
        TransceiverStatistics(
            messagesReceived: messagesReceived.load(ordering: .relaxed),
            messagesSent: messagesSent.load(ordering: .relaxed),
            payloadBytesReceived: payloadBytesReceived.load(ordering: .relaxed),
            payloadBytesSent: payloadBytesSent.load(ordering: .relaxed),
            handshakeFailures: handshakeFailures.load(ordering: .relaxed),
            unknownType: unknownType.load(ordering: .relaxed),
            undecodable: undecodable.load(ordering: .relaxed),
            handlerFailures: handlerFailures.load(ordering: .relaxed),
            lateReplies: lateReplies.load(ordering: .relaxed),
            protocolErrors: protocolErrors.load(ordering: .relaxed),
            slowPeersDropped: slowPeersDropped.load(ordering: .relaxed),
            connectionsRefused: connectionsRefused.load(ordering: .relaxed),
            idleConnectionsClosed: idleConnectionsClosed.load(ordering: .relaxed),
            rateLimitedConnections: rateLimitedConnections.load(ordering: .relaxed),
            budgetEvictions: budgetEvictions.load(ordering: .relaxed),
            stalledFrames: stalledFrames.load(ordering: .relaxed),
            silentConnectionsClosed: silentConnectionsClosed.load(ordering: .relaxed),
            endsWithoutSealedClose: endsWithoutSealedClose.load(ordering: .relaxed)
        )
    }
}
