import NIOCore
import ParleySecurity
import ParleyWire

/// A configured connection: the frames for the business logic, and the connection's own state.
struct ConnectionChannel: Sendable {
    var frames: NIOAsyncChannel<Frame, Never>
    var connection: PeerConnection
}

/// The pipeline every Parley connection uses, TCP or Unix socket:
/// bytes ⇄ read activity ⇄ FrameDecoder/FrameEncoder ⇄ [rate limit] ⇄ [sealing] ⇄ handshake deadline ⇄ heartbeats
/// ⇄ [idle timeout] ⇄ reply resolution ⇄ async frames.
/// The sealing handler is there only on connections that authenticate with a shared secret.
enum ChannelSetup {
    static func configure(
        _ channel: any Channel,
        role: ConnectionRole,
        sharedSecret: SharedSecret?,
        requests: PendingRequests,
        configuration: TransceiverConfiguration,
        counters: StatisticsCounters
    ) throws -> ConnectionChannel {
        let connection = PeerConnection(
            channel: channel, role: role, sharedSecret: sharedSecret, requests: requests, configuration: configuration
        )
        let activity = ReadActivity()
        let sync = channel.pipeline.syncOperations
        // A sealed frame carries a whole frame of up to the maximum size, plus its own kind byte and tag.
        let maximumBodySize = configuration.maximumFrameSize + (sharedSecret == nil ? 0 : FrameLayout.sealedOverhead)
        try sync.addHandler(ReadActivityHandler(activity))
        try sync.addHandler(ByteToMessageHandler(FrameDecoder(maximumBodySize: maximumBodySize)))
        if let limit = configuration.messageRateLimit { try sync.addHandler(RateLimitHandler(limit: limit)) }
        try sync.addHandler(FrameEncoder())
        if sharedSecret != nil { try sync.addHandler(FrameProtectionHandler()) }
        try sync.addHandler(
            HandshakeDeadlineHandler(
                timeout: TimeAmount(configuration.handshakeTimeout),
                // Open: the peer's hello. With a secret: its hello, then its proof of the secret.
                frames: sharedSecret == nil ? 1 : 2,
                startsWithFirstByte: role == .acceptor
            )
        )
        try sync.addHandler(
            HeartbeatHandler(
                interval: TimeAmount(configuration.heartbeatInterval),
                timeout: TimeAmount(configuration.heartbeatTimeout),
                activity: activity,
                connection: connection
            )
        )
        if let timeout = configuration.idleTimeout { try sync.addHandler(IdleTimeoutHandler(timeout: timeout)) }
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
    /// Converts, clamping to what `TimeAmount` holds (±292 years), so "no timeout" written as a huge duration works.
    init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        let (total, overflow2) = scaled.addingReportingOverflow(attoseconds / 1_000_000_000)
        self = .nanoseconds(overflow || overflow2 ? (seconds < 0 ? .min : .max) : total)
    }
}
