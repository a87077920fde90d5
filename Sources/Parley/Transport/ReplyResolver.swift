import NIOCore
import ParleyWire

/// Completes outstanding requests as soon as their replies are read, on the event loop. Replies never wait
/// behind the messages queued for handlers, so a handler may itself await a reply from the same peer.
///
/// The last handler before the handlers' queue, it also gathers the frames for that queue into one
/// ``QueuedFrames`` per socket read (a read may bring several batches), passed on when the read completes (before
/// an error or the end of input, so nothing is overtaken). Frames of 4 KiB or more in all are charged to the
/// connection's memory budget (when it has one) as they join the queue, so that complete frames waiting for a
/// busy handler are held inside the budget; ``FrameReader`` returns the charge. Fewer bytes are bounded by count
/// instead: at most 4 reads' worth wait per connection. When the charge cannot be kept (the connection is being
/// closed for the budget), the frames are dropped.
final class ReplyResolver: ChannelInboundHandler {
    typealias InboundIn = FrameBatch
    typealias InboundOut = QueuedFrames

    private let connection: PeerConnection
    private let counters: StatisticsCounters
    private var gathered: [Frame] = []

    init(connection: PeerConnection, counters: StatisticsCounters) {
        self.connection = connection
        self.counters = counters
    }

    /// Hands the frames gathered so far on to the handlers' queue.
    private func passGathered(context: ChannelHandlerContext) {
        guard !gathered.isEmpty else { return }
        var out = QueuedFrames(frames: gathered)
        gathered = []
        if let tap = connection.budget {
            // Counted only here: a connection without a budget has nothing to charge.
            let bytes = out.frames.reduce(0) { $0 + $1.wireSize }
            if bytes >= BudgetTap.queuedFrameMinimum {
                guard tap.budget.charge(bytes, to: tap.account) else { return }
                out.charged = bytes
            }
        }
        context.fireChannelRead(wrapInboundOut(out))
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let batch = unwrapInboundIn(data)
        // Before the handshake there is nothing to answer; the handshake sees (and refuses) whatever came first.
        guard connection.peer != nil else {
            gathered += batch.frames
            return
        }
        if gathered.isEmpty, !batch.frames.contains(where: \.isReply) {
            gathered = batch.frames  // the usual read: nothing to resolve, nothing to copy
            return
        }
        for frame in batch.frames {
            switch frame {
            case .message(let message):
                guard let replyTo = message.header.inReplyTo else {
                    gathered.append(frame)
                    continue
                }
                connection.messagesIn.add(1, ordering: .relaxed)
                counters.received(1, payloadBytes: message.payload.readableBytes)
                let reply = InboundMessage(header: message.header, payload: message.payload)
                if !connection.resolve(replyTo, with: .success(.message(reply))) {
                    counters.lateReplies.add(1, ordering: .relaxed)
                }
            case .errorReply(let reply):
                if !connection.resolve(reply.inReplyTo, with: .success(.error(reply))) {
                    counters.lateReplies.add(1, ordering: .relaxed)
                }
            default:
                gathered.append(frame)
            }
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        passGathered(context: context)
        context.fireChannelReadComplete()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        passGathered(context: context)
        context.fireErrorCaught(error)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        passGathered(context: context)
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        passGathered(context: context)
        context.fireChannelInactive()
    }
}

extension Frame {
    /// A message answering a request, or an error reply: resolved where it arrives, not queued.
    fileprivate var isReply: Bool {
        switch self {
        case .message(let message): message.header.inReplyTo != nil
        case .errorReply: true
        case .hello, .auth, .sealed, .ping, .pong, .close: false
        }
    }
}
