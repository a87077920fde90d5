import NIOCore

/// Writes frames. A payload above `copyThreshold` bytes goes to the socket as its own buffer (a vectored
/// write) instead of being copied behind the header, so sending or forwarding a large message copies nothing.
public final class FrameEncoder: ChannelOutboundHandler, RemovableChannelHandler {
    public typealias OutboundIn = Frame
    public typealias OutboundOut = ByteBuffer

    public static let copyThreshold = 4096

    public init() {}

    public func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let frame = unwrapOutboundIn(data)
        if let payload = frame.trailingPayload, payload.readableBytes > Self.copyThreshold {
            var header = context.channel.allocator.buffer(capacity: 64)
            frame.writePrefixAndHeader(to: &header)
            context.write(wrapOutboundOut(header), promise: nil)
            context.write(wrapOutboundOut(payload), promise: promise)
        } else {
            var buffer = context.channel.allocator.buffer(capacity: FrameLayout.prefixSize + frame.bodySize)
            frame.write(to: &buffer)
            context.write(wrapOutboundOut(buffer), promise: promise)
        }
    }
}
