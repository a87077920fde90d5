import NIOCore
import ParleyWire

/// Counts frames against a ``MessageRateLimit``. A peer over the limit has its connection ended (the error
/// reaches the connection's task, which sends `rate-limited` and closes); frames it sends meanwhile are dropped.
/// Closing rather than slowing down: a peer that floods is misbehaving, and throttling would keep it
/// connected while hiding that. Control-socket clients are exempt.
final class RateLimitHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = Frame
    typealias InboundOut = Frame

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
        guard exempt || bucket?.take(now: context.eventLoop.now) != false else {
            exceeded = true
            context.fireErrorCaught(ConnectionLimitExceeded.rate(limit))
            return
        }
        context.fireChannelRead(data)
    }
}
