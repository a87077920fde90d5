import NIOCore
import ParleyWire

/// Counts frames against a ``MessageRateLimit``. A peer over the limit has its connection ended (the error
/// reaches the connection's task, which sends `rate-limited` and closes); frames it sends meanwhile are dropped.
/// Closing rather than slowing down: a peer that floods is misbehaving, and throttling would keep it
/// connected while hiding that. Control-socket clients are exempt.
final class RateLimitHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = FrameBatch
    typealias InboundOut = FrameBatch

    private let limit: MessageRateLimit
    /// Filled on the event loop's clock from when the handler joins the pipeline.
    private var bucket: TokenBucket?
    private var exempt = false
    private var exceeded = false

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

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !exceeded else { return }
        guard !exempt, bucket != nil else {
            context.fireChannelRead(data)
            return
        }
        var batch = unwrapInboundIn(data)
        let now = context.eventLoop.now
        // One token per frame; the frames within the limit pass, the first one over it ends the connection.
        guard let over = batch.frames.indices.first(where: { _ in !bucket!.take(now: now) }) else {
            context.fireChannelRead(data)
            return
        }
        exceeded = true
        batch.frames.removeSubrange(over...)
        if !batch.frames.isEmpty { context.fireChannelRead(wrapInboundOut(batch)) }
        context.fireErrorCaught(ConnectionLimitExceeded.rate(limit))
    }
}
