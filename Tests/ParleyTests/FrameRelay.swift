import NIOCore
import NIOPosix
import ParleyWire
import Synchronization

/// A man in the middle on 127.0.0.1: accepts connections and relays each to `target`, frame by frame, recording
/// every byte. `tamper` decides what is forwarded in place of each frame: the frame itself, an altered copy,
/// nothing, or several frames (a replay).
final class FrameRelay: Sendable {
    enum Direction: Sendable {
        case toAcceptor
        case toDialer
    }

    /// Gets the direction, the index of the frame in that direction (from 0) and its bytes (prefix included).
    typealias Tamper = @Sendable (_ direction: Direction, _ index: Int, _ frame: [UInt8]) -> [[UInt8]]

    private let server = Mutex<(any Channel)?>(nil)
    /// The relay's connections to the target, for ``endStreamsToAcceptor()``.
    private let acceptorSides = Mutex<[any Channel]>([])
    private let log = Mutex<[UInt8]>([])
    private let target: Int
    private let tamper: Tamper

    private init(target: Int, tamper: @escaping Tamper) {
        self.target = target
        self.tamper = tamper
    }

    /// Everything received from both sides so far.
    var recorded: [UInt8] { log.withLock { $0 } }

    var port: Int { server.withLock { $0!.localAddress!.port! } }

    static func start(
        to target: Int, group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        tamper: @escaping Tamper = { _, _, frame in [frame] }
    ) async throws -> FrameRelay {
        let relay = FrameRelay(target: target, tamper: tamper)
        let channel = try await ServerBootstrap(group: group)
            // The dialer's bytes are read only once the connection to the target is up.
            .childChannelOption(.autoRead, value: false)
            .childChannelInitializer { dialerSide in
                dialerSide.eventLoop.makeCompletedFuture {
                    try dialerSide.pipeline.syncOperations.addHandler(Pipe(relay, .toAcceptor))
                }
            }
            .bind(to: try SocketAddress(ipAddress: "127.0.0.1", port: 0)).get()
        relay.server.withLock { $0 = channel }
        return relay
    }

    func stop() async {
        try? await server.withLock { $0 }?.close()
    }

    /// Ends the stream towards the acceptor (a FIN, as anyone on the path can send), without a close frame; the
    /// other direction stays open.
    func endStreamsToAcceptor() async {
        for channel in acceptorSides.withLock({ $0 }) { try? await channel.close(mode: .output) }
    }

    private func record(_ bytes: some Sequence<UInt8>) { log.withLock { $0.append(contentsOf: bytes) } }

    /// One direction: cuts the bytes into frames (5-byte prefix: start byte, little-endian body length) and
    /// forwards what `tamper` returns for each. The dialer's side dials the target when it becomes active.
    private final class Pipe: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer

        private let relay: FrameRelay
        private let direction: Direction
        private var partner: (any Channel)?
        private var pending = ByteBuffer()
        private var index = 0

        init(_ relay: FrameRelay, _ direction: Direction, partner: (any Channel)? = nil) {
            self.relay = relay
            self.direction = direction
            self.partner = partner
        }

        func channelActive(context: ChannelHandlerContext) {
            context.fireChannelActive()
            guard partner == nil else { return }
            let dialerSide = context.channel
            let relay = self.relay
            let pipe = NIOLoopBound(self, eventLoop: context.eventLoop)
            ClientBootstrap(group: context.eventLoop)
                .channelInitializer { acceptorSide in
                    acceptorSide.eventLoop.makeCompletedFuture {
                        try acceptorSide.pipeline.syncOperations.addHandler(Pipe(relay, .toDialer, partner: dialerSide))
                    }
                }
                .connect(to: try! SocketAddress(ipAddress: "127.0.0.1", port: relay.target))  // a literal address: cannot fail
                .whenComplete { result in
                    switch result {
                    case .success(let acceptorSide):
                        pipe.value.partner = acceptorSide
                        relay.acceptorSides.withLock { $0.append(acceptorSide) }
                        dialerSide.setOption(.autoRead, value: true).whenSuccess { dialerSide.read() }
                    case .failure:
                        dialerSide.close(promise: nil)
                    }
                }
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var bytes = unwrapInboundIn(data)
            relay.record(bytes.readableBytesView)
            pending.writeBuffer(&bytes)
            while let length = pending.getInteger(at: pending.readerIndex + 1, endianness: .little, as: UInt32.self),
                pending.readableBytes >= FrameLayout.prefixSize + Int(length)
            {
                let frame = pending.readBytes(length: FrameLayout.prefixSize + Int(length))!
                for out in relay.tamper(direction, index, frame) { partner?.write(ByteBuffer(bytes: out), promise: nil) }
                index += 1
            }
            partner?.flush()
        }

        func channelInactive(context: ChannelHandlerContext) {
            partner?.close(promise: nil)
            context.fireChannelInactive()
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            context.close(promise: nil)
        }
    }
}
