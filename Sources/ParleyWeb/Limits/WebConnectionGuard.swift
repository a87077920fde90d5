import NIOCore
import NIOHTTPTypes
import Synchronization

/// How many web connections are open, against their cap: the web debugger's share of parleyd's file descriptors,
/// so that a flood of browsers or half-sent requests leaves the Parley port and the control socket theirs.
public final class WebConnectionCount: Sendable {
    public let limit: Int
    private let open = Atomic<Int>(0)
    private let refused = Atomic<Int>(0)

    public init(limit: Int) {
        self.limit = limit
    }

    /// Counts a connection in; false (and not counted) when the cap is reached.
    func admit() -> Bool {
        while true {
            let current = open.load(ordering: .relaxed)
            guard current < limit else {
                refused.add(1, ordering: .relaxed)
                return false
            }
            if open.compareExchange(expected: current, desired: current + 1, ordering: .relaxed).exchanged { return true }
        }
    }

    func leave() { open.subtract(1, ordering: .relaxed) }

    public var current: Int { open.load(ordering: .relaxed) }
    /// Connections closed at once because the cap was reached, since start.
    public var refusedTotal: Int { refused.load(ordering: .relaxed) }
}

/// The limits a web connection lives under, on top of Hummingbird's idle timeout (which closes a connection that
/// has not sent a whole request head in time):
///
/// * over the cap of open connections it is closed at once;
/// * a request whose body stops arriving for `stallTimeout` is closed (a half-sent upload);
/// * a connection that takes nothing parleyd writes for `stallTimeout` (its socket stays unwritable: a page that
///   stopped reading its live stream, a download never read) is closed, so that what waits for it is freed.
final class WebConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let count: WebConnectionCount
    private let stallTimeout: TimeAmount
    private var admitted = false
    private var bodyTimer: Scheduled<Void>?
    private var writeTimer: Scheduled<Void>?

    init(count: WebConnectionCount, stallTimeout: TimeAmount) {
        self.count = count
        self.stallTimeout = stallTimeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        guard count.admit() else {
            context.close(promise: nil)
            return
        }
        admitted = true
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        release()
    }

    func channelInactive(context: ChannelHandlerContext) {
        release()
        context.fireChannelInactive()
    }

    /// The connection is gone: its timers stop, and its place under the cap is given back (once).
    private func release() {
        bodyTimer?.cancel()
        writeTimer?.cancel()
        if admitted {
            admitted = false
            count.leave()
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head, .body: restartBodyTimer(context)
        case .end:
            bodyTimer?.cancel()
            bodyTimer = nil
        }
        context.fireChannelRead(data)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            writeTimer?.cancel()
            writeTimer = nil
        } else if writeTimer == nil {
            writeTimer = context.eventLoop.assumeIsolated().scheduleTask(in: stallTimeout) {
                context.close(promise: nil)
            }
        }
        context.fireChannelWritabilityChanged()
    }

    private func restartBodyTimer(_ context: ChannelHandlerContext) {
        bodyTimer?.cancel()
        bodyTimer = context.eventLoop.assumeIsolated().scheduleTask(in: stallTimeout) {
            context.close(promise: nil)
        }
    }
}
