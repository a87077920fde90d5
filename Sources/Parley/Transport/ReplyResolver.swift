import NIOCore
import ParleyWire

/// Completes outstanding requests as soon as their replies are read, on the event loop. Replies never wait
/// behind the messages queued for handlers, so a handler may itself await a reply from the same peer.
///
/// The last handler before the handlers' queue, it also gathers the frames for that queue into one
/// ``FrameBatch`` per socket read, passed on when the read completes (before an error or the end of input, so
/// nothing is overtaken). A batch of 4 KiB or more is charged to the connection's memory budget (when it has
/// one) as it joins the queue, so that complete frames waiting for a busy handler are held inside the budget;
/// ``FrameReader`` returns the charge. A smaller batch is bounded by count instead: at most 4 wait per
/// connection. When the charge cannot be kept (the connection is being closed for the budget), the batch is
/// dropped.
final class ReplyResolver: ChannelInboundHandler {
    typealias InboundIn = Frame
    typealias InboundOut = FrameBatch

    private let connection: PeerConnection
    private let counters: StatisticsCounters
    private var batch: [Frame] = []
    /// The batch's wire size, counted only where there is a budget to charge it to.
    private var batchBytes = 0

    init(connection: PeerConnection, counters: StatisticsCounters) {
        self.connection = connection
        self.counters = counters
    }

    private func queue(_ frame: Frame) {
        batch.append(frame)
        if connection.budget != nil { batchBytes += frame.wireSize }
    }

    /// Hands the frames gathered so far on to the handlers' queue.
    private func passBatch(context: ChannelHandlerContext) {
        guard !batch.isEmpty else { return }
        var out = FrameBatch(frames: batch)
        let bytes = batchBytes
        batch = []
        batchBytes = 0
        if let tap = connection.budget, bytes >= BudgetTap.queuedFrameMinimum {
            guard tap.budget.charge(bytes, to: tap.account) else { return }
            out.charged = bytes
        }
        context.fireChannelRead(wrapInboundOut(out))
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        // Before the handshake there is nothing to answer; the handshake sees (and refuses) whatever came first.
        guard connection.peer != nil else {
            queue(frame)
            return
        }
        switch frame {
        case .message(let message):
            guard let replyTo = message.header.inReplyTo else {
                queue(frame)
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
            queue(frame)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        passBatch(context: context)
        context.fireChannelReadComplete()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        passBatch(context: context)
        context.fireErrorCaught(error)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        passBatch(context: context)
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        passBatch(context: context)
        context.fireChannelInactive()
    }
}
