import Foundation
import NIOCore
import NIOPosix
import ParleyTestSupport

// The floor under Parley's round trip: SwiftNIO alone, no protocol, the same 109 bytes echoed between two
// processes, each on one event loop. What Parley's round trip takes beyond it is what its own layers cost
// (framing, the pipeline's handlers, the connection's task, the send queue); what this takes is the kernel's
// loopback and the wake-ups it shares with every other row.

/// Writes back what it reads, flushing once per read.
private final class EchoHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        context.write(data, promise: nil)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        context.flush()
    }
}

/// `parley-bench bare-echo`: a SwiftNIO echo server on loopback; prints `READY port=…` and runs until killed.
func runBareEcho() async throws -> Never {
    let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
        .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
        .childChannelInitializer { channel in
            channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(EchoHandler()) }
        }
        .bind(host: "127.0.0.1", port: 0).get()
    try await announceReady(port: server.localAddress!.port!, id: "bare-echo")
}

/// Sends `payload`, waits until as many bytes came back, `warmUp + count` times, all on the connection's event
/// loop; succeeds `done` with the last `count` round trips' times in microseconds, sorted.
private final class RoundTrips: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let payload: ByteBuffer
    private var remaining: Int
    private let timed: Int
    private var received = 0
    private var started = NIODeadline.now()
    private var times: [Double] = []
    private let done: EventLoopPromise<[Double]>

    init(payload: ByteBuffer, warmUp: Int, count: Int, done: EventLoopPromise<[Double]>) {
        self.payload = payload
        self.remaining = warmUp + count
        self.timed = count
        self.done = done
        times.reserveCapacity(count)
    }

    func channelActive(context: ChannelHandlerContext) {
        send(context)
    }

    private func send(_ context: ChannelHandlerContext) {
        started = .now()
        context.writeAndFlush(wrapOutboundOut(payload), promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        received += unwrapInboundIn(data).readableBytes
        guard received >= payload.readableBytes else { return }
        received -= payload.readableBytes
        if remaining <= timed { times.append(Double((NIODeadline.now() - started).nanoseconds) / 1000) }
        remaining -= 1
        if remaining == 0 {
            done.succeed(times.sorted())
        } else {
            send(context)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        done.fail(error)
        context.close(promise: nil)
    }

    /// The echo went away before the last round trip: fail rather than wait for ever (a completed promise
    /// ignores this).
    func channelInactive(context: ChannelHandlerContext) {
        done.fail(ChannelError.eof)
        context.fireChannelInactive()
    }
}

/// Round trips through a bare SwiftNIO echo in a child process: `warmUp` untimed, then `count` timed.
func bareEchoLatencies(payload: ByteBuffer, count: Int, warmUp: Int) async throws -> [Double] {
    let child = try await PeerProcess.start(executable: "parley-bench", arguments: ["bare-echo"])
    defer { child.terminate() }
    let loop = MultiThreadedEventLoopGroup.singleton.next()
    let done = loop.makePromise(of: [Double].self)
    let channel = try await ClientBootstrap(group: loop)
        .channelOption(.tcpOption(.tcp_nodelay), value: 1)
        .channelInitializer { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(RoundTrips(payload: payload, warmUp: warmUp, count: count, done: done))
            }
        }
        .connect(host: "127.0.0.1", port: child.port).get()
    defer { channel.close(promise: nil) }
    return try await done.futureResult.get()
}
