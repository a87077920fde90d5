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
///   stopped reading its live stream, a download never read) is closed, so that what waits for it is freed;
/// * a request answered before its body has all arrived (refused: too large, unauthorised, of the wrong type) is
///   answered with `Connection: close`, and the connection closed once at most ``lingerBytes`` more have come or
///   ``lingerTime`` has passed: Hummingbird would otherwise read the whole body, be it a gigabyte, to find the
///   next request. The little it reads meanwhile gives a client still sending the time to read the answer before
///   the close resets the connection.
final class WebConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    static let lingerBytes = 1 << 20
    static let lingerTime = TimeAmount.seconds(1)

    private let count: WebConnectionCount
    private let stallTimeout: TimeAmount
    private var admitted = false
    private var bodyTimer: Scheduled<Void>?
    private var writeTimer: Scheduled<Void>?
    /// Request heads and ends read, and response heads written: the request a response answers is the oldest
    /// unanswered one (HTTP/1.1 answers in order).
    private var requestsEnded = 0
    private var responsesBegun = 0
    /// Set once a request has been answered before its body had all arrived: how many more body bytes it may send
    /// before the connection closes.
    private var lingerBudget: Int?
    /// Whether that answer's end has been written, and whether it has reached the socket: the connection closes
    /// only after it has.
    private var answerEnded = false
    private var answerFlushed = false
    private var closeOnceAnswered = false
    private var lingerTimer: Scheduled<Void>?

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
        lingerTimer?.cancel()
        if admitted {
            admitted = false
            count.leave()
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            restartBodyTimer(context)
        case .body(let bytes):
            restartBodyTimer(context)
            if let budget = lingerBudget {
                lingerBudget = budget - bytes.readableBytes
                if budget < bytes.readableBytes {
                    closeAfterAnswer(context)
                    return
                }
            }
        case .end:
            requestsEnded += 1
            bodyTimer?.cancel()
            bodyTimer = nil
            if lingerBudget != nil {
                // The refused request is over, and its answer said the connection closes.
                closeAfterAnswer(context)
                return
            }
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(var head) where head.status.code >= 200:
            responsesBegun += 1
            guard requestsEnded < responsesBegun, lingerBudget == nil else { break }
            head.headerFields[.connection] = "close"
            lingerBudget = Self.lingerBytes
            context.write(wrapOutboundOut(.head(head)), promise: promise)
            return
        case .end where lingerBudget != nil && !answerEnded:
            answerEnded = true
            let written = context.writeAndFlush(data)
            written.cascade(to: promise)
            written.assumeIsolated().whenComplete { _ in
                self.answerFlushed = true
                if self.closeOnceAnswered {
                    context.close(promise: nil)
                } else {
                    self.lingerTimer = context.eventLoop.assumeIsolated().scheduleTask(in: Self.lingerTime) { context.close(promise: nil) }
                }
            }
            return
        default:
            break
        }
        context.write(data, promise: promise)
    }

    /// Closes the connection of a request answered early, now if its answer is all written, else once it is.
    private func closeAfterAnswer(_ context: ChannelHandlerContext) {
        if answerFlushed {
            context.close(promise: nil)
        } else {
            closeOnceAnswered = true
        }
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
