import Foundation
import NIOCore
import NIOPosix
import ParleyWire

/// A TCP connection that sends whatever a test wants — bytes and frames no well-behaved peer would send — and keeps
/// what comes back, for a transceiver or parleyd to meet. Built on NIO rather than blocking sockets, so that
/// hundreds can be open at once without a thread each, and waiting for bytes, frames or the close is waiting for
/// the event (the bytes are read as they arrive, unless the connection is opened not to read at all).
public final class RawConnection: Sendable {
    public let channel: any Channel
    private let received: Observed<Received>

    private struct Received: Sendable {
        var bytes: [UInt8] = []
        /// How many of `bytes` ``read(_:timeout:)`` has handed out.
        var consumed = 0
        var closedAt: ContinuousClock.Instant?
        var timedOut = false
    }

    private init(channel: any Channel, received: Observed<Received>) {
        self.channel = channel
        self.received = received
    }

    /// Connects to `host`:`port`, from `source` if given (any 127.x.y.z is this host on Linux, but counts as
    /// another address for per-address limits). With `reading: false` nothing is ever read from the socket: a peer
    /// that never reads, whose kernel buffers fill.
    public static func open(
        port: Int, host: String = "127.0.0.1", from source: String? = nil, reading: Bool = true
    ) async throws -> RawConnection {
        let received = Observed(Received())
        var bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(ChannelOptions.autoRead, value: reading)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(Collector(received))
                }
            }
        if let source { bootstrap = bootstrap.bind(to: try SocketAddress(ipAddress: source, port: 0)) }
        let channel = try await bootstrap.connect(to: try SocketAddress(ipAddress: host, port: port)).get()
        return RawConnection(accepted: channel, received: received)
    }

    /// A connection whose channel has its ``Collector`` already.
    private convenience init(accepted channel: any Channel, received: Observed<Received>) {
        self.init(channel: channel, received: received)
        channel.closeFuture.whenComplete { _ in received.update { $0.closedAt = $0.closedAt ?? .now } }
    }

    /// Closes the connection when the test lets go of it, as a socket's owner would.
    deinit { channel.close(promise: nil) }

    /// Writes `bytes` and waits until they are handed to the kernel.
    public func write(_ bytes: [UInt8]) async throws {
        try await channel.writeAndFlush(channel.allocator.buffer(bytes: bytes)).get()
    }

    /// Writes `frame` as the frame codec encodes it.
    public func write(_ frame: Frame) async throws {
        var buffer = channel.allocator.buffer(capacity: 64)
        frame.write(to: &buffer)
        try await channel.writeAndFlush(buffer).get()
    }

    /// Half-closes: the peer reads end-of-stream after what was sent.
    public func shutdownOutput() async {
        try? await channel.close(mode: .output).get()
    }

    /// Makes the coming close abortive (RST instead of FIN), as when a host dies mid-connection.
    public func setAbortiveClose() async throws {
        guard let socket = channel as? any SocketOptionProvider else { throw NotASocket() }
        try await socket.setSoLinger(linger(l_onoff: 1, l_linger: 0)).get()
    }

    struct NotASocket: Error, CustomStringConvertible {
        var description: String { "the connection's channel has no socket options" }
    }

    /// Closes the connection from this side.
    public func close() {
        channel.close(promise: nil)
    }

    /// Waits until the connection is closed by the other side; after `timeout` closes it itself and returns false.
    public func waitUntilClosed(timeout: Duration) async -> Bool {
        let channel = self.channel
        let received = self.received
        let timer = channel.eventLoop.scheduleTask(in: TimeAmount(timeout)) {
            received.update { $0.timedOut = true }
            channel.close(promise: nil)
        }
        try? await channel.closeFuture.get()
        timer.cancel()
        return !received.value.timedOut
    }

    /// What was read until the other side closed the connection, or until `timeout` passed with it still open (it
    /// stays open then), and whether it closed. Throws only if the waiting task is cancelled.
    public func bytes(timeout: Duration = .seconds(15)) async throws -> (bytes: [UInt8], closed: Bool) {
        do {
            _ = try await received.wait(for: "the connection to close", timeout: timeout) { $0.closedAt != nil ? true : nil }
        } catch is TestTimeout {
            return (received.value.bytes, false)
        }
        return (received.value.bytes, true)
    }

    /// The frames read until the other side closed the connection or `timeout` passed (see ``bytes(timeout:)``).
    public func frames(timeout: Duration = .seconds(15)) async throws -> (frames: [Frame], closed: Bool) {
        let (bytes, closed) = try await bytes(timeout: timeout)
        return (try Self.decode(bytes), closed)
    }

    /// Waits until at least `count` whole frames have arrived, or the connection has closed, and returns every
    /// frame read so far; ``TestTimeout`` after `timeout`.
    public func waitForFrames(_ count: Int, timeout: Duration = .seconds(15)) async throws -> [Frame] {
        let bytes = try await received.wait(for: "\(count) frame(s)", timeout: timeout) { received -> [UInt8]? in
            if received.closedAt != nil { return received.bytes }
            return (try? Self.decode(received.bytes)).flatMap { $0.count >= count ? received.bytes : nil }
        }
        return try Self.decode(bytes)
    }

    /// The next `count` bytes read (after those earlier calls took), once they have arrived; throws if the
    /// connection closes first, or after `timeout`.
    public func read(_ count: Int, timeout: Duration = .seconds(30)) async throws -> [UInt8] {
        let start = try await received.wait(for: "\(count) more byte(s)", timeout: timeout) { received -> Int? in
            if received.bytes.count - received.consumed >= count { return received.consumed }
            if received.closedAt != nil { return -1 }
            return nil
        }
        guard start >= 0 else { throw ClosedEarly(wanted: count) }
        received.update { $0.consumed = start + count }
        return Array(received.value.bytes[start..<start + count])
    }

    /// The connection closed before the bytes a ``read(_:timeout:)`` waited for arrived.
    public struct ClosedEarly: Error, CustomStringConvertible {
        public var wanted: Int
        public var description: String { "the connection closed before \(wanted) more byte(s) arrived" }
    }

    private static func decode(_ bytes: [UInt8]) throws -> [Frame] {
        var buffer = ByteBuffer(bytes: bytes)
        var decoder = FrameDecoder()
        var frames: [Frame] = []
        while let frame = try decoder.decode(buffer: &buffer) { frames.append(frame) }
        return frames
    }

    public var isClosed: Bool { received.value.closedAt != nil }
    /// When the connection closed (by either side).
    public var closedAt: ContinuousClock.Instant? { received.value.closedAt }
    /// Everything read so far.
    public var bytes: [UInt8] { received.value.bytes }

    /// A listening socket on 127.0.0.1 (any free port) for playing the server's side by hand: each connection it
    /// accepts is a ``RawConnection``, handed out in order by ``accept(timeout:)``.
    public final class Listener: Sendable {
        public let port: Int
        private let channel: any Channel
        private let accepted: Observed<Accepted>

        private struct Accepted: Sendable {
            var connections: [RawConnection] = []
            var taken = 0
        }

        private init(channel: any Channel, accepted: Observed<Accepted>) throws {
            self.channel = channel
            self.accepted = accepted
            guard let port = channel.localAddress?.port else { throw ListenerError() }
            self.port = port
        }

        /// With `reading: false` nothing is ever read from the connections it accepts: a server that stopped
        /// reading, whose kernel buffers fill.
        public static func open(reading: Bool = true) async throws -> Listener {
            let accepted = Observed(Accepted())
            let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .childChannelOption(ChannelOptions.autoRead, value: reading)
                .childChannelInitializer { child in
                    child.eventLoop.makeCompletedFuture {
                        let received = Observed(Received())
                        try child.pipeline.syncOperations.addHandler(Collector(received))
                        let connection = RawConnection(accepted: child, received: received)
                        accepted.update { $0.connections.append(connection) }
                    }
                }
                .bind(host: "127.0.0.1", port: 0).get()
            return try Listener(channel: channel, accepted: accepted)
        }

        /// The next connection not yet handed out (one caller at a time), or ``TestTimeout`` after `timeout`.
        public func accept(timeout: Duration = .seconds(15)) async throws -> RawConnection {
            let connection = try await accepted.wait(for: "a connection to port \(port)", timeout: timeout) { accepted in
                accepted.connections.count > accepted.taken ? accepted.connections[accepted.taken] : nil
            }
            accepted.update { $0.taken += 1 }
            return connection
        }

        deinit { channel.close(promise: nil) }

        struct ListenerError: Error, CustomStringConvertible {
            var description: String { "the listener has no local port" }
        }
    }

    /// Keeps what a connection reads; runs on its event loop.
    private final class Collector: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer

        private let received: Observed<Received>

        init(_ received: Observed<Received>) { self.received = received }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let bytes = Array(unwrapInboundIn(data).readableBytesView)
            received.update { $0.bytes += bytes }
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            // A reset by the peer after it refused us is a close like any other here.
            context.close(promise: nil)
        }
    }
}

/// A hello frame as a hand-written peer would send it.
public func rawHello(minimum: UInt16 = 1, maximum: UInt16 = 1, json: String? = nil) -> Frame {
    let body = json ?? #"{"peerID":"\#(UUID().uuidString)","name":"raw","capabilities":[],"accepts":[]}"#
    return .hello(HelloFrame(minimumVersion: minimum, maximumVersion: maximum, body: ByteBuffer(string: body)))
}
