import NIOCore
import ParleyWire

/// A configured connection: the frames for the business logic, and the connection's own state.
struct ConnectionChannel: Sendable {
    var frames: NIOAsyncChannel<Frame, Never>
    var connection: PeerConnection
}

/// The pipeline every Parley connection uses, TCP or Unix socket:
/// bytes ⇄ FrameDecoder/FrameEncoder ⇄ handshake deadline ⇄ heartbeats ⇄ reply resolution ⇄ async frames.
enum ChannelSetup {
    static func configure(
        _ channel: any Channel,
        role: ConnectionRole,
        configuration: TransceiverConfiguration,
        counters: StatisticsCounters
    ) throws -> ConnectionChannel {
        let connection = PeerConnection(channel: channel, role: role, configuration: configuration)
        let sync = channel.pipeline.syncOperations
        try sync.addHandler(ByteToMessageHandler(FrameDecoder(maximumBodySize: configuration.maximumFrameSize)))
        try sync.addHandler(FrameEncoder())
        try sync.addHandler(HandshakeDeadlineHandler(timeout: TimeAmount(configuration.handshakeTimeout)))
        try sync.addHandler(
            HeartbeatHandler(
                interval: TimeAmount(configuration.heartbeatInterval),
                timeout: TimeAmount(configuration.heartbeatTimeout)
            )
        )
        try sync.addHandler(ReplyResolver(connection: connection, counters: counters))
        let frames = try NIOAsyncChannel<Frame, Never>(
            wrappingChannelSynchronously: channel,
            // Counted in frames, not bytes: each socket read still delivers every frame it completed, so
            // small messages keep flowing in batches, while at most `highWatermark` large frames wait here.
            // Above it Parley stops reading from the socket and TCP pushes back on the sender.
            configuration: .init(backPressureStrategy: .init(lowWatermark: 2, highWatermark: 16))
        )
        return ConnectionChannel(frames: frames, connection: connection)
    }
}

extension TimeAmount {
    init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self = .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
