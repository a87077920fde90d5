import NIOCore
import ParleyWire

/// Completes outstanding requests as soon as their replies are read, on the event loop. Replies never wait
/// behind the messages queued for handlers, so a handler may itself await a reply from the same peer.
final class ReplyResolver: ChannelInboundHandler {
    typealias InboundIn = Frame
    typealias InboundOut = Frame

    private let connection: PeerConnection
    private let counters: StatisticsCounters

    init(connection: PeerConnection, counters: StatisticsCounters) {
        self.connection = connection
        self.counters = counters
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // Before the handshake there is nothing to answer; the handshake sees (and refuses) whatever came first.
        guard connection.peer != nil else {
            context.fireChannelRead(data)
            return
        }
        switch unwrapInboundIn(data) {
        case .message(let message):
            guard let replyTo = message.header.inReplyTo else {
                context.fireChannelRead(data)
                return
            }
            connection.messagesIn.add(1, ordering: .relaxed)
            counters.messagesReceived.add(1, ordering: .relaxed)
            counters.payloadBytesReceived.add(message.payload.readableBytes, ordering: .relaxed)
            let reply = InboundMessage(header: message.header, payload: message.payload)
            if !connection.resolve(replyTo, with: .success(.message(reply))) {
                counters.lateReplies.add(1, ordering: .relaxed)
            }
        case .errorReply(let reply):
            if !connection.resolve(reply.inReplyTo, with: .success(.error(reply))) {
                counters.lateReplies.add(1, ordering: .relaxed)
            }
        default:
            context.fireChannelRead(data)
        }
    }
}
