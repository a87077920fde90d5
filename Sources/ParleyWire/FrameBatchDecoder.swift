import NIOCore

/// The frames one read of the byte stream completed, in the order they arrived. Frames move up a Parley pipeline
/// in batches, not one by one: each handler between the socket and the business logic is then called once per
/// read, whatever the number of small messages in it.
public struct FrameBatch: Sendable, Hashable {
    public var frames: [Frame]

    public init(_ frames: [Frame]) {
        self.frames = frames
    }
}

/// Splits the byte stream into frames (with ``FrameDecoder``'s rules) and passes on the frames each read
/// completes as one ``FrameBatch``; a read that completes none passes nothing on.
///
/// Why not NIO's `ByteToMessageHandler`: it passes frames on one at a time, and each frame then pays every
/// handler above for the hop (a type check to wrap and unwrap it, retains, the handler's own bookkeeping). For a
/// stream of small messages that was most of the cost of receiving one (docs/performance.md).
///
/// A malformed frame ends decoding: the frames before it are passed on, then the error; later bytes are dropped.
/// Bytes of an unfinished frame when the input ends are reported as a truncated frame.
public final class FrameBatchDecoder: ChannelInboundHandler {
    public typealias InboundIn = ByteBuffer
    public typealias InboundOut = FrameBatch

    /// Frames up to this size get their whole room at once; larger ones grow with what arrives (unless the peer
    /// is trusted: then every frame gets its whole room at once).
    public static let wholeRoomMaximum = 1 << 20

    private var decoder: FrameDecoder
    /// The start of a frame whose end has not arrived yet.
    private var unfinished: ByteBuffer?
    /// The stream held a malformed frame: nothing after it can be trusted to be framed right.
    private var failed = false

    /// See ``init(maximumBodySize:trustsPeer:)``.
    public let trustsPeer: Bool

    /// - Parameter trustsPeer: whether a large frame gets its whole room as soon as its length is known, in memory
    ///   reused from earlier frames (``FrameRoomPool``). Faster, but the room is then resident before the frame's
    ///   bytes arrive, so a peer that stops in the middle of a frame holds more than it sent: trusted peers only.
    public init(maximumBodySize: Int = FrameLayout.defaultMaximumBodySize, trustsPeer: Bool = false) {
        decoder = FrameDecoder(maximumBodySize: maximumBodySize)
        self.trustsPeer = trustsPeer
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !failed else { return }
        var bytes = unwrapInboundIn(data)
        var frames: [Frame] = []
        do {
            if unfinished != nil {
                // The frame begun in an earlier read; when this read does not complete it, it took all the bytes.
                guard let first = try complete(with: &bytes, allocator: context.channel.allocator) else { return }
                frames.append(first)
            }
            while let frame = try decoder.decode(buffer: &bytes) { frames.append(frame) }
        } catch {
            failed = true
            unfinished = nil
            pass(frames, context: context)
            context.fireErrorCaught(error)
            return
        }
        // Still in this read's buffer, as a slice of exactly its bytes: when a later read completes it, those bytes
        // (not the whole buffer, which NIO's pool of read buffers also holds) are copied out.
        if bytes.readableBytes > 0 { unfinished = bytes.slice() }
        pass(frames, context: context)
    }

    /// Moves the bytes the unfinished frame still lacks from the start of `bytes` into it: the frame, once whole, or
    /// nil when `bytes` ran out first. Only the frame that straddles two reads is copied; the frames after it are
    /// decoded in place, in the new read's buffer. Room for the frame is taken once its length is known and found
    /// within the maximum: all of it up to ``wholeRoomMaximum``; beyond, about four times the bytes received so far
    /// (at most five), so that what a peer merely announces does not decide how much memory is reserved for it. A
    /// 4 MiB frame is copied at 1 MiB and not again. A trusted peer's frame gets its whole room at once, from
    /// ``FrameRoomPool``, which reuses the memory of earlier rooms once nothing refers to their frames.
    private func complete(with bytes: inout ByteBuffer, allocator: ByteBufferAllocator) throws -> Frame? {
        var held = unfinished!
        unfinished = nil
        if held.readableBytes < FrameLayout.prefixSize {
            var head = bytes.readSlice(length: min(FrameLayout.prefixSize - held.readableBytes, bytes.readableBytes))!
            held.writeBuffer(&head)
        }
        // Checks the start byte and the announced length, and returns nil until the frame is whole.
        if let frame = try decoder.decode(buffer: &held) { return frame }
        guard let announced = FrameLayout.announcedBodyLength(in: held) else {
            unfinished = held
            return nil
        }
        let total = FrameLayout.prefixSize + Int(announced)
        var rest = bytes.readSlice(length: min(total - held.readableBytes, bytes.readableBytes))!
        if held.writableBytes < rest.readableBytes {
            // `held` is a slice of a read buffer (no room: it is exactly its bytes) or a buffer of ours that is full.
            let needed = held.readableBytes + rest.readableBytes
            var room = trustsPeer ? total : min(total, max(needed, Self.wholeRoomMaximum, 4 * held.readableBytes))
            // Nearly there: the rest too, rather than one more copy for the last few bytes.
            if total - room < room / 4 { room = total }
            var grown = (trustsPeer ? FrameRoomPool.allocator : allocator).buffer(capacity: room)
            grown.writeBuffer(&held)
            held = grown
        }
        held.writeBuffer(&rest)
        if let frame = try decoder.decode(buffer: &held) { return frame }
        unfinished = held
        return nil
    }

    public func channelInactive(context: ChannelHandlerContext) {
        reportUnfinished(context: context)
        context.fireChannelInactive()
    }

    public func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .some(.inputClosed) = event as? ChannelEvent { reportUnfinished(context: context) }
        context.fireUserInboundEventTriggered(event)
    }

    public func handlerRemoved(context: ChannelHandlerContext) {
        unfinished = nil
    }

    private func pass(_ frames: [Frame], context: ChannelHandlerContext) {
        guard !frames.isEmpty else { return }
        context.fireChannelRead(wrapInboundOut(FrameBatch(frames)))
    }

    /// The input has ended: a frame begun and not finished never will be.
    private func reportUnfinished(context: ChannelHandlerContext) {
        guard let held = unfinished, !failed else { return }
        unfinished = nil
        failed = true
        context.fireErrorCaught(FrameLayout.truncation(of: held))
    }
}
