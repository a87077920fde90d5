import NIOCore
import ParleyWire

/// Keeps a connection's liveness known: after the handshake it pings every `interval` (so a peer that only
/// answers pings stays alive even while we send to it nonstop), answers pings with pongs, and closes the
/// connection when nothing at all has arrived for `timeout` while we were reading. After the handshake,
/// pings and pongs never leave this handler; before it they pass on, and the handshake refuses them. The silence is
/// a ``SilenceTimer`` over the connection's last read.
final class HeartbeatHandler: ChannelDuplexHandler {
    // Duplex to see the outbound Start event and read requests; writes pass through untouched.
    typealias InboundIn = FrameBatch
    typealias InboundOut = FrameBatch
    typealias OutboundIn = FrameBatch
    typealias OutboundOut = FrameBatch

    /// Sent as a user outbound event once the handshake has succeeded with a peer that speaks heartbeats.
    struct Start: Sendable {}

    /// Asks whether the peer is still there, now, instead of at the heartbeat timeout: a ping goes out at once,
    /// and if nothing at all arrives within `within` (while we are reading) the connection is closed as silent.
    /// Sent when another connection claims this peer's id from another address: after an address change the
    /// peer itself is dialling back, and the old connection is dead but not yet known to be.
    struct Probe: Sendable {
        var within: TimeAmount
    }

    private let interval: TimeAmount
    private let timeout: TimeAmount
    private let activity: ReadActivity
    private let connection: PeerConnection
    /// Whether a socket read has been asked for and not yet completed. When it stays false, reading is paused
    /// because our own handlers are behind (backpressure): silence then says nothing about the peer.
    private var readRequested = true
    private var ticker: RepeatedTask?
    private var silence: SilenceTimer?
    private var nonce: UInt64 = 0
    private var probing = false

    init(interval: TimeAmount, timeout: TimeAmount, activity: ReadActivity, connection: PeerConnection) {
        self.interval = interval
        self.timeout = timeout
        self.activity = activity
        self.connection = connection
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard ticker != nil else {
            context.fireChannelRead(data)
            return
        }
        var batch = unwrapInboundIn(data)
        guard batch.frames.contains(where: \.isHeartbeat) else {
            context.fireChannelRead(data)
            return
        }
        // Only while writable: a peer that floods pings and never reads would otherwise pile pongs up in memory.
        if context.channel.isWritable {
            var pongs: [Frame] = []
            for case .ping(let nonce) in batch.frames { pongs.append(.pong(nonce)) }
            if !pongs.isEmpty { context.writeAndFlush(wrapOutboundOut(FrameBatch(pongs)), promise: nil) }
        }
        batch.frames.removeAll(where: \.isHeartbeat)
        if !batch.frames.isEmpty { context.fireChannelRead(wrapInboundOut(batch)) }
    }

    func read(context: ChannelHandlerContext) {
        readRequested = true
        context.read()
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        readRequested = false
        context.fireChannelReadComplete()
    }

    func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        if let probe = event as? Probe {
            promise?.succeed()
            self.probe(within: probe.within, context: context)
            return
        }
        guard event is Start else {
            context.triggerUserOutboundEvent(event, promise: promise)
            return
        }
        promise?.succeed()
        guard ticker == nil else { return }
        let loop = context.eventLoop
        activity.lastRead = loop.now
        let loopBound = NIOLoopBound((self, context), eventLoop: loop)
        ticker = loop.scheduleRepeatedTask(initialDelay: interval, delay: interval) { _ in
            let (handler, context) = loopBound.value
            handler.tick(context: context)
        }
        let activity = self.activity
        silence = SilenceTimer(on: loop, timeout: timeout, lastActivity: { activity.lastRead }) { silence in
            let (handler, context) = loopBound.value
            handler.peerIsGone(silence: silence, context: context)
        }
        silence?.start()
    }

    func handlerRemoved(context: ChannelHandlerContext) { stop() }

    func channelInactive(context: ChannelHandlerContext) {
        stop()
        context.fireChannelInactive()
    }

    private func stop() {
        ticker?.cancel()
        ticker = nil
        silence?.cancel()
        silence = nil
    }

    private func tick(context: ChannelHandlerContext) {
        if !readRequested {
            // We stopped reading ourselves; the peer's pongs are waiting in the socket. Not its fault.
            activity.lastRead = context.eventLoop.now
        }
        // Ping every interval, whatever else is going on: 14 bytes a second is cheap, and it keeps this side
        // visibly alive to a peer even while we ourselves have stopped reading (backpressure).
        nonce &+= 1
        context.writeAndFlush(wrapOutboundOut(FrameBatch([.ping(nonce)])), promise: nil)
    }

    private func probe(within: TimeAmount, context: ChannelHandlerContext) {
        // Before the handshake there is no heartbeat to speak, and one probe at a time is enough.
        guard ticker != nil, !probing else { return }
        probing = true
        let sent = context.eventLoop.now
        nonce &+= 1
        context.writeAndFlush(wrapOutboundOut(FrameBatch([.ping(nonce)])), promise: nil)
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        context.eventLoop.scheduleTask(in: within) {
            let (handler, context) = loopBound.value
            handler.probing = false
            // Anything read since the ping is life; so is our own reading being paused (the answer may be waiting
            // in the socket).
            guard handler.ticker != nil, handler.readRequested, handler.activity.lastRead < sent else { return }
            handler.peerIsGone(silence: context.eventLoop.now - handler.activity.lastRead, context: context)
        }
    }

    /// Nothing arrived for longer than the timeout while the loop was reading: the peer is gone.
    private func peerIsGone(silence: TimeAmount, context: ChannelHandlerContext) {
        stop()
        let error = HeartbeatTimeout(silence: silence)
        connection.noteEnd(.silent(.nanoseconds(silence.nanoseconds)))
        context.fireErrorCaught(error)
        context.close(promise: nil)
    }
}

extension Frame {
    fileprivate var isHeartbeat: Bool {
        switch self {
        case .ping, .pong: true
        case .hello, .auth, .sealed, .message, .errorReply, .close: false
        }
    }
}

/// Nothing arrived from the peer for longer than the heartbeat timeout: it vanished without saying goodbye.
struct HeartbeatTimeout: Error, CustomStringConvertible {
    var silence: TimeAmount
    var description: String {
        "no data or heartbeat from the peer for \(Double(silence.nanoseconds) / 1e9) s; it is presumed gone"
    }
}

/// When bytes last arrived on a connection. Shared by two handlers of one pipeline, so only ever touched on
/// that channel's event loop.
final class ReadActivity {
    /// On the event loop's clock (`EventLoop.now`).
    var lastRead = NIODeadline.now()
}

/// Sits in front of the frame decoder and notes every read: a peer in the middle of sending a large frame is
/// alive, even though no whole frame (and so no pong) has arrived for a while.
final class ReadActivityHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    /// Sent up the pipeline before the connection's first bytes (see ``HandshakeDeadlineHandler``).
    struct FirstBytes: Sendable {}

    private let activity: ReadActivity
    private var seenBytes = false

    init(_ activity: ReadActivity) { self.activity = activity }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        activity.lastRead = context.eventLoop.now
        if !seenBytes {
            seenBytes = true
            context.fireUserInboundEventTriggered(FirstBytes())
        }
        context.fireChannelRead(data)
    }
}
