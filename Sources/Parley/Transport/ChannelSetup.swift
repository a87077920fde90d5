import NIOCore
import NIOPosix
import ParleyBlocking
import ParleySecurity
import ParleyWire

/// A configured connection: the frames for the business logic, and the connection's own state.
struct ConnectionChannel: Sendable {
    var channel: any Channel
    /// Where the connection's frames wait for its task.
    var inbox: FrameInbox
    var connection: PeerConnection

    /// Runs `body` with the connection's frames, then closes the channel and waits until it is closed, whether
    /// `body` returned or threw.
    func readThenClose(_ body: (inout FrameReader) async throws -> Void) async throws {
        var frames = FrameReader(inbox, budget: connection.budget)
        do {
            try await body(&frames)
        } catch {
            await close()
            throw error
        }
        await close()
    }

    /// Closes the channel, or waits for the close another path began.
    private func close() async {
        channel.close(promise: nil)
        try? await channel.closeFuture.get()
    }
}

/// The pipeline of every connection, TCP or Unix socket:
/// bytes ⇄ read activity ⇄ framing ⇄ [rate limit] ⇄ handshake deadline ⇄ heartbeats ⇄ [idle timeout]
/// ⇄ reply resolution (and the batching and budget of frames waiting for handlers) ⇄ the inbox the connection's
/// task takes batches from.
///
/// The framing part is FrameBatchDecoder/FrameEncoder (and, on connections that authenticate with a shared secret,
/// the sealing handler) for Parley. On an accepted TCP connection a ``FramingSniffer`` holds its place until the
/// first byte: 0xCE installs the original Swift Talk debugger framing instead (``OriginalFrameDecoder``,
/// ``OriginalFrameEncoder``, ``OriginalFramingBridge``), if this node accepts it. Above the framing every
/// connection carries Parley frames in ``FrameBatch``es: inbound one per read, outbound one per flush of the
/// outbound queue (a batch's write completes with its last frame).
///
/// TCP connections are charged to the node's ``MemoryBudget`` (bytes of frames still arriving, and queued
/// messages); control-socket clients are local and not charged.
struct ChannelSetup: Sendable {
    let configuration: TransceiverConfiguration
    let requests: PendingRequests
    let counters: StatisticsCounters
    let logThrottle: LogThrottle
    let budget: MemoryBudget?
    /// Told when an accepted connection first speaks (it is then no longer one to close to make room).
    let admission: ConnectionAdmission?

    /// Device authentication's TLS contexts, made when the transceiver is (an unusable key is reported by `run`).
    let deviceTLS: Result<DeviceTLS, any Error>?

    /// How the node's TCP connections authenticate: with device certificates over TLS, with the shared secret, or
    /// not at all.
    func tcpAuthentication(for role: ConnectionRole) -> ConnectionAuthentication {
        if case .success(let tls) = deviceTLS, role == .acceptor || tls.authentication.dialsDevices {
            return .device(tls, presented: PeerCertificate())
        }
        return configuration.sharedSecret.map { .sharedSecret($0) } ?? .none
    }

    func configure(
        _ channel: any Channel, role: ConnectionRole, authentication: ConnectionAuthentication, sniffsFraming: Bool = false,
        handshakeClockStartsAtAccept: Bool = false
    ) throws -> ConnectionChannel {
        let isLocal = channel.isLocalSocket
        let tap = isLocal ? nil : budget.map { BudgetTap(budget: $0, channel: channel) }
        // Its large frames are gathered in the pool's memory (framingHandlers); the pool gives it back on this loop.
        if isLocal { FrameRoomPool.trims(on: channel.eventLoop) }
        let connection = PeerConnection(
            channel: channel, role: role, authentication: authentication, requests: requests, configuration: configuration,
            budget: tap
        )
        // Evicted by the budget: ended at once, the way a protocol error ends a connection (goodbye, then close,
        // within a second), without waiting for its handlers to reach an error: until the channel closes, its
        // decoder still holds the bytes the budget has already taken back.
        tap?.account.ending = { [connection] error in
            let reason = DisconnectReason.closedByUs(error.closeCode, message: error.description)
            connection.noteEnd(reason)
            connection.outbound.finish(
                sending: .close(CloseFrame(code: error.closeCode, message: error.description)), then: .close, timeout: .seconds(1),
                reason: TransceiverError.connectionClosed(connection.peer?.id ?? PeerID(), reason: reason)
            )
        }
        let activity = ReadActivity()
        let sync = channel.pipeline.syncOperations
        // TLS first, below the budget: what the budget charges and what the decoder gives back are the same bytes.
        if case .device(let tls, let presented) = authentication {
            switch role {
            case .dialer: try sync.addHandlers(ClearRefusalReader(), tls.handler(for: .dialer, recordingIn: presented))
            case .acceptor:
                try sync.addHandler(
                    TLSSniffer(
                        makeHandler: { try tls.handler(for: .acceptor, recordingIn: presented) },
                        inTheClear: { [configuration] in
                            // Unless devices are all this node accepts, a peer in the clear meets the node's other mode.
                            guard tls.authentication.allowsCleartext else { return }
                            connection.authenticate(configuration.sharedSecret.map { .sharedSecret($0) } ?? .none)
                        }
                    )
                )
            }
        }
        if let tap {
            try sync.addHandler(
                InboundBudgetHandler(tap: tap, activity: activity, stallTimeout: configuration.frameStallTimeout.map(TimeAmount.init))
            )
        }
        try sync.addHandler(ReadActivityHandler(activity))
        if sniffsFraming {
            try sync.addHandler(
                FramingSniffer { [self] framing, context in
                    let handlers = try framingHandlers(framing, for: connection, tap: tap, isLocal: isLocal)
                    try context.pipeline.syncOperations.addHandlers(handlers, position: .after(context.handler))
                }
            )
        } else {
            try sync.addHandlers(framingHandlers(.parley, for: connection, tap: tap, isLocal: isLocal))
        }
        if let limit = configuration.messageRateLimit { try sync.addHandler(RateLimitHandler(limit: limit)) }
        try sync.addHandler(
            HandshakeDeadlineHandler(
                timeout: TimeAmount(configuration.handshakeTimeout),
                // Open: the peer's hello. With a secret: its hello, then its proof of the secret. (An app in the
                // original framing meets either: its first frame arrives as a hello and a message at once.)
                frames: { connection.sharedSecret == nil ? 1 : 2 },
                startsWithFirstByte: role == .acceptor && !handshakeClockStartsAtAccept,
                onFirstBytes: role == .acceptor ? { [admission] in admission?.spoke(channel) } : nil
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
        let inbox = FrameInbox(eventLoop: channel.eventLoop, onInputEnd: { [connection] in connection.noteInputEnded() })
        try sync.addHandler(inbox)
        return ConnectionChannel(channel: channel, inbox: inbox, connection: connection)
    }

    /// The handlers that turn bytes into Parley frames and back, for one framing. With a budget, a frame's bytes
    /// are returned to it as soon as the decoder has completed the frame. Only the other end of a Unix socket (same
    /// machine, the socket's permissions: parleyd's local apps, or parleyd for an app) is trusted with whole rooms
    /// of reused memory: such a room is resident before the bytes arrive, more than a LAN peer is charged for
    /// (reused rooms for every peer: 457 MiB against 331 MiB in the slow-frames attack of scripts/measure-attacks).
    private func framingHandlers(_ framing: Framing, for connection: PeerConnection, tap: BudgetTap?, isLocal: Bool) throws -> [any ChannelHandler] {
        switch framing {
        case .parley:
            let sealed = connection.sharedSecret != nil
            // A sealed frame carries a whole frame of up to the maximum size, plus its own kind byte and tag.
            let maximumBodySize = configuration.maximumFrameSize + (sealed ? FrameLayout.sealedOverhead : 0)
            let credit: [any ChannelHandler] = tap.map { [DecodedBudgetHandler(tap: $0)] } ?? []
            return [FrameBatchDecoder(maximumBodySize: maximumBodySize, trustsPeer: isLocal)] + credit + [FrameEncoder()]
                + (sealed ? [FrameProtectionHandler()] : [])
        case .original:
            guard let support = configuration.originalFraming else { throw HandshakeError.originalFramingNotAccepted }
            switch connection.authentication {
            case .none: break
            case .sharedSecret, .device:
                // Such an app cannot authenticate: with a secret or devices it comes in only if the configuration
                // says so, and then in the clear.
                guard support.allowedWithoutSecret else { throw HandshakeError.originalFramingNeedsSecret }
                connection.waiveAuthentication()
            }
            let credit: [any ChannelHandler] =
                tap.map { [DecodedOriginalBudgetHandler(tap: $0)] } ?? []
            return [ByteToMessageHandler(OriginalFrameDecoder(maximumBodySize: configuration.maximumFrameSize))] + credit + [
                OriginalFrameEncoder(),
                OriginalFramingBridge(
                    translator: support.translator, logger: configuration.logger,
                    logThrottle: logThrottle, pool: .shared
                ),
            ]
        }
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
