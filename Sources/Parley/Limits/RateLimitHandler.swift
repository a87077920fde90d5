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
    private var bucket: TokenBucket
    private var exempt = false
    private var exceeded = false

    init(limit: MessageRateLimit) {
        self.limit = limit
        bucket = TokenBucket(limit, now: .now())
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { exempt = context.channel.isLocalSocket }
    }

    func channelActive(context: ChannelHandlerContext) {
        exempt = context.channel.isLocalSocket
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !exceeded else { return }
        guard exempt || bucket.take(now: .now()) else {
            exceeded = true
            context.fireErrorCaught(ConnectionLimitExceeded.rate(limit))
            return
        }
        context.fireChannelRead(data)
    }
}
