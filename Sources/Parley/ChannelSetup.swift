import NIOCore
import ParleyWire

/// The pipeline every Parley connection uses, TCP or Unix socket:
/// bytes ⇄ FrameDecoder/FrameEncoder ⇄ HeartbeatHandler ⇄ async frames for the business logic.
enum ChannelSetup {
    static func configure(
        _ channel: any Channel,
        configuration: TransceiverConfiguration
    ) throws -> NIOAsyncChannel<Frame, Never> {
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
        return try NIOAsyncChannel<Frame, Never>(
            wrappingChannelSynchronously: channel,
            // Counted in frames, not bytes: each socket read still delivers every frame it completed, so
            // small messages keep flowing in batches, while at most `highWatermark` large frames wait here.
            configuration: .init(backPressureStrategy: .init(lowWatermark: 2, highWatermark: 16))
        )
    }
}

extension TimeAmount {
    init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self = .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
