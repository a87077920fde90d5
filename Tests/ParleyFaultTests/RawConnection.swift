import NIOCore
import NIOPosix
import Synchronization

/// A TCP connection to parleyd that sends whatever a test wants — bytes no well-behaved peer would send — and keeps
/// what comes back. Built on NIO rather than blocking sockets so that hundreds can be open at once without a
/// thread each and no wait ever blocks a thread.
final class RawConnection: Sendable {
    let channel: any Channel
    private let received: Received

    private init(channel: any Channel, received: Received) {
        self.channel = channel
        self.received = received
    }

    /// Connects to 127.0.0.1:`port`, from `source` if given (any 127.x.y.z is this host on Linux, but counts as
    /// another address for parleyd's per-address limit). With `reading: false` nothing is ever read from the
    /// socket: a peer that never reads.
    static func open(port: Int, from source: String? = nil, reading: Bool = true) async throws -> RawConnection {
        let received = Received()
        var bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(ChannelOptions.autoRead, value: reading)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(Collector(received))
                }
            }
        if let source { bootstrap = bootstrap.bind(to: try SocketAddress(ipAddress: source, port: 0)) }
        let channel = try await bootstrap.connect(to: try SocketAddress(ipAddress: "127.0.0.1", port: port)).get()
        channel.closeFuture.whenComplete { _ in received.noteClosed() }
        return RawConnection(channel: channel, received: received)
    }

    /// Writes `bytes` and waits until they are handed to the kernel.
    func write(_ bytes: [UInt8]) async throws {
        try await channel.writeAndFlush(channel.allocator.buffer(bytes: bytes)).get()
    }

    /// Half-closes: the peer reads end-of-stream after what was sent.
    func shutdownOutput() async {
        try? await channel.close(mode: .output).get()
    }

    /// Waits until the connection is closed by the other side; after `timeout` closes it itself and returns false.
    func waitUntilClosed(timeout: Duration) async -> Bool {
        let channel = self.channel
        let timer = channel.eventLoop.scheduleTask(in: TimeAmount(timeout)) {
            self.received.noteTimedOut()
            channel.close(promise: nil)
        }
        try? await channel.closeFuture.get()
        timer.cancel()
        return !received.timedOut
    }

    func close() {
        channel.close(promise: nil)
    }

    var isClosed: Bool { received.closedAt != nil }
    /// When the connection closed (by either side).
    var closedAt: ContinuousClock.Instant? { received.closedAt }
    /// Everything read so far.
    var bytes: [UInt8] { received.bytes }

    /// Keeps what a connection reads; shared between its handler (on the event loop) and the test.
    private final class Received: Sendable {
        private struct State {
            var bytes: [UInt8] = []
            var closedAt: ContinuousClock.Instant?
            var timedOut = false
        }

        private let state = Mutex(State())

        func append(_ buffer: ByteBuffer) { state.withLock { $0.bytes += buffer.readableBytesView } }
        func noteClosed() { state.withLock { $0.closedAt = $0.closedAt ?? .now } }
        func noteTimedOut() { state.withLock { $0.timedOut = true } }
        var bytes: [UInt8] { state.withLock { $0.bytes } }
        var closedAt: ContinuousClock.Instant? { state.withLock { $0.closedAt } }
        var timedOut: Bool { state.withLock { $0.timedOut } }
    }

    private final class Collector: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer

        private let received: Received

        init(_ received: Received) { self.received = received }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            received.append(unwrapInboundIn(data))
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            // A reset by parleyd after it refused us is a close like any other here.
            context.close(promise: nil)
        }
    }
}
