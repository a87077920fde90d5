import NIOCore

/// Writes frames, which come down the pipeline in batches (``FrameBatch``; a single frame is a batch of one).
/// - Small frames written between two flushes are encoded one after the other into one buffer, handed on at the
///   flush (or once it reaches ``coalesceLimit``): a burst of small messages costs one buffer, one write through
///   the handlers below and one iovec, not one of each per message.
/// - A payload above ``copyThreshold`` bytes goes to the socket as its own buffer (a vectored write) instead of
///   being copied behind the header, so sending or forwarding a large message copies nothing.
/// A batch's promise completes when its last frame has been written.
public final class FrameEncoder: ChannelOutboundHandler, RemovableChannelHandler {
    public typealias OutboundIn = FrameBatch
    public typealias OutboundOut = ByteBuffer

    public static let copyThreshold = 4096
    /// Bytes of small frames gathered before they are handed on without waiting for the flush.
    public static let coalesceLimit = 64 * 1024

    /// Small frames written since the last flush, and the promises of their writes.
    private var gathered: ByteBuffer?
    private var promises: [EventLoopPromise<Void>] = []

    public init() {}

    public func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let frames = unwrapOutboundIn(data).frames
        for (index, frame) in frames.enumerated() {
            // Only the batch's last frame carries its promise: writes complete in order.
            let promise = index == frames.count - 1 ? promise : nil
            if Self.isLarge(frame), let payload = frame.trailingPayload {
                passGathered(context: context)
                var header = context.channel.allocator.buffer(capacity: 64)
                frame.writePrefixAndHeader(to: &header)
                context.write(wrapOutboundOut(header), promise: nil)
                context.write(wrapOutboundOut(payload), promise: promise)
                continue
            }
            if gathered == nil {
                // Sized for what is about to be gathered: a lone frame gets a buffer of its own size (a peer that
                // pings without reading makes us queue pongs one flush each); a batch, room for its small frames up
                // to the next large one, whose payload is not copied.
                let small = frames[index...].prefix { !Self.isLarge($0) }
                let size = min(Self.coalesceLimit, small.reduce(0) { $0 + $1.wireSize })
                gathered = context.channel.allocator.buffer(capacity: size)
            }
            frame.write(to: &gathered!)
            if let promise { promises.append(promise) }
            if gathered!.readableBytes >= Self.coalesceLimit { passGathered(context: context) }
        }
        if frames.isEmpty, let promise {
            // Nothing to write, but completed in order, after what was written before it.
            passGathered(context: context)
            context.write(wrapOutboundOut(context.channel.allocator.buffer(capacity: 0)), promise: promise)
        }
    }

    public func flush(context: ChannelHandlerContext) {
        passGathered(context: context)
        context.flush()
    }

    public func handlerRemoved(context: ChannelHandlerContext) {
        // Written, never flushed, and the channel is gone: as NIO fails such writes.
        gathered = nil
        let failed = promises
        promises = []
        for promise in failed { promise.fail(ChannelError.ioOnClosedChannel) }
    }

    /// A frame whose payload goes to the socket as a buffer of its own instead of being copied.
    private static func isLarge(_ frame: Frame) -> Bool {
        (frame.trailingPayload?.readableBytes ?? 0) > copyThreshold
    }

    private func passGathered(context: ChannelHandlerContext) {
        guard let buffer = gathered else { return }
        // Taken before the write: on a closed channel NIO fails the write at once, and a callback of its promise
        // may write again, into a fresh gathering.
        gathered = nil
        var written = promises.first
        if promises.count > 1 {
            let all = context.eventLoop.makePromise(of: Void.self)
            for promise in promises { all.futureResult.cascade(to: promise) }
            written = all
        }
        // Its room is kept: a flush usually brings one promise, and the array would otherwise be allocated anew.
        promises.removeAll(keepingCapacity: true)
        context.write(wrapOutboundOut(buffer), promise: written)
    }
}
