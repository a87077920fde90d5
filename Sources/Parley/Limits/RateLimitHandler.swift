import NIOCore
import ParleyWire

/// Counts frames against a ``MessageRateLimit``. A peer over the limit has its connection ended (the error
/// reaches the connection's task, which sends `rate-limited` and closes); frames it sends meanwhile are dropped.
/// Closing rather than slowing down: a peer that floods is misbehaving, and throttling would keep it
/// connected while hiding that. Control-socket clients are exempt.
///
/// Answers to this side's own requests are not the peer's doing: each request written to the peer gives one
/// reply (or error reply) that costs no token, so a peer that answers whatever parleyd forwards to it, however
/// fast, is never taken for a flood; replies beyond the requests sent count as any frame.
final class RateLimitHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = FrameBatch
    typealias InboundOut = FrameBatch
    typealias OutboundIn = FrameBatch
    typealias OutboundOut = FrameBatch

    private let limit: MessageRateLimit
    /// Filled on the event loop's clock from when the handler joins the pipeline.
    private var bucket: TokenBucket?
    private var exempt = false
    private var exceeded = false
    /// Requests written to the peer whose replies have not come yet (as far as this handler counts).
    private var repliesOwed = 0

    init(limit: MessageRateLimit) {
        self.limit = limit
    }

    func handlerAdded(context: ChannelHandlerContext) {
        bucket = TokenBucket(limit, now: context.eventLoop.now)
        if context.channel.isActive { exempt = context.channel.isLocalSocket }
    }

    func channelActive(context: ChannelHandlerContext) {
        exempt = context.channel.isLocalSocket
        context.fireChannelActive()
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if !exempt {
            for case .message(let message) in unwrapOutboundIn(data).frames where message.header.flags.contains(.expectsReply) {
                repliesOwed += 1
            }
        }
        context.write(data, promise: promise)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !exceeded else { return }
        guard !exempt, bucket != nil else {
            context.fireChannelRead(data)
            return
        }
        var batch = unwrapInboundIn(data)
        let now = context.eventLoop.now
        // One token per frame but an owed reply; the frames within the limit pass, the first one over it ends the
        // connection.
        guard let over = batch.frames.firstIndex(where: { !admits($0, now: now) }) else {
            context.fireChannelRead(data)
            return
        }
        exceeded = true
        batch.frames.removeSubrange(over...)
        if !batch.frames.isEmpty { context.fireChannelRead(wrapInboundOut(batch)) }
        context.fireErrorCaught(ConnectionLimitExceeded.rate(limit))
    }

    private func admits(_ frame: Frame, now: NIODeadline) -> Bool {
        if repliesOwed > 0 {
            switch frame {
            case .message(let message) where message.header.inReplyTo != nil:
                repliesOwed -= 1
                return true
            case .errorReply:
                repliesOwed -= 1
                return true
            default:
                break
            }
        }
        return bucket!.take(now: now)
    }
}
