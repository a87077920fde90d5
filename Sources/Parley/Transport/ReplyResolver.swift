import NIOCore
import ParleyWire

/// Completes outstanding requests as soon as their replies are read, on the event loop. Replies never wait
/// behind the messages queued for handlers, so a handler may itself await a reply from the same peer.
///
/// The last handler before that queue, it also charges a large frame joining the queue to the connection's
/// memory budget (when it has one), so that complete frames waiting for a busy handler are held inside the
/// budget; ``BudgetTap/handled(_:)`` returns the charge. When the charge cannot be kept (the connection is being
/// closed for the budget), the frame is dropped. (Here rather than in a handler of its own: one hop less for
/// every frame.)
final class ReplyResolver: ChannelInboundHandler {
    typealias InboundIn = Frame
    typealias InboundOut = Frame

    private let connection: PeerConnection
    private let counters: StatisticsCounters

    init(connection: PeerConnection, counters: StatisticsCounters) {
        self.connection = connection
        self.counters = counters
    }

    /// Hands `frame` on to the handlers' queue.
    private func queue(_ frame: Frame, _ data: NIOAny, context: ChannelHandlerContext) {
        if let tap = connection.budget {
            let size = frame.wireSize
            if size >= BudgetTap.queuedFrameMinimum, !tap.budget.charge(size, to: tap.account) { return }
        }
        context.fireChannelRead(data)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        // Before the handshake there is nothing to answer; the handshake sees (and refuses) whatever came first.
        guard connection.peer != nil else {
            queue(frame, data, context: context)
            return
        }
        switch frame {
        case .message(let message):
            guard let replyTo = message.header.inReplyTo else {
                queue(frame, data, context: context)
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
            queue(frame, data, context: context)
        }
    }
}
