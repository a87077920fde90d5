import Foundation
import Logging
import NIOCore
import ParleyDiscovery
import NIOPosix
import ParleyWire
import Synchronization

/// A Parley node: listens for peers, connects to peers, and routes typed messages between them.
///
/// ```swift
/// let parley = Transceiver(configuration: .init(name: "kitchen-tablet"))
/// parley.receive(AddItemCommand.self) { command, peer in … }
/// try await parley.start()
/// try await parley.connect(to: Endpoint(host: "127.0.0.1", port: 7206))
/// try await parley.broadcast(AddItemCommand(title: "milk"))
/// ```
///
/// Lifecycle: ``run()`` is the structured form (it returns when the transceiver stops; cancel it, or call
/// ``stop()``, to shut down) and is what a `ServiceGroup` runs. ``start()`` is the convenience form for scripts
/// and tests: it runs ``run()`` in a task owned by the transceiver and returns once the listener is bound.
public final class Transceiver: Sendable {
    public let configuration: TransceiverConfiguration
    let logger: Logger
    let router = Router()
    let counters: StatisticsCounters
    let requests = PendingRequests()
    let admission: ConnectionAdmission
    /// For the warnings a remote host can trigger at will (bad handshakes, protocol errors, refusals, unhandled
    /// messages): see ``LogThrottle``.
    public let logThrottle: LogThrottle
    let state = Mutex(State())
    var group: any EventLoopGroup { configuration.eventLoopGroup }

    public init(configuration: TransceiverConfiguration) {
        self.configuration = configuration
        self.logger = configuration.logger
        counters = StatisticsCounters()
        logThrottle = LogThrottle(timers: configuration.eventLoopGroup.next())
        admission = ConnectionAdmission(configuration: configuration, counters: counters, logThrottle: logThrottle)
    }

    // MARK: - State

    enum Lifecycle {
        case idle
        case running(jobs: AsyncStream<Job>.Continuation)
        case stopping
        case stopped
    }

    struct Job: Sendable {
        var channel: ConnectionChannel
        var endpoint: Endpoint?
        /// A dialer's handshake, already started (its hello is on its way); `nil` for accepted connections.
        var handshake: HandshakeStateMachine?
        /// The dialer's `connect` waits here for the handshake's result.
        var handshakeDone: CheckedContinuation<Peer, any Error>?
    }

    struct GateWaiter {
        var predicate: @Sendable (Peer) -> Bool
        var continuation: CheckedContinuation<Peer, any Error>
    }

    struct State {
        var lifecycle = Lifecycle.idle
        var localPeerID: PeerID?
        var listeningAddress: SocketAddress?
        var serverChannel: (any Channel)?
        var controlChannel: (any Channel)?
        var runTask: Task<Void, any Error>?
        var startWaiters: [CheckedContinuation<Void, any Error>] = []
        var table = PeerTable<PeerConnection>()
        var connections: Set<PeerConnection> = []
        var eventSubscribers: [UInt64: AsyncStream<PeerEvent>.Continuation] = [:]
        var gateWaiters: [UInt64: GateWaiter] = [:]
        var nextToken: UInt64 = 0
        /// `stop()` came before `run()` was running; it shuts down as soon as it is.
        var stopRequested = false
        var stoppedWaiters: [CheckedContinuation<Void, Never>] = []
        var discovery: AvahiDiscovery?
        var discoveryStatus = DiscoveryStatus.off
        var services: [String: DiscoveredService] = [:]
        /// Instance names that have a task connecting to them.
        var dialing: Set<String> = []

        mutating func token() -> UInt64 {
            nextToken += 1
            return nextToken
        }
    }

    // MARK: - Public read-only state

    /// This node's stable id. Resolved (and, the first time, persisted) when the transceiver starts.
    public var localPeerID: PeerID? { state.withLock { $0.localPeerID } }

    /// The TCP port the listener is bound to, once running (useful with port 0).
    public var listeningPort: Int? { state.withLock { $0.listeningAddress?.port } }

    /// The peers currently connected, oldest first.
    public var peers: [Peer] { state.withLock { $0.table.peers } }

    /// Counters of what has been sent, received and dropped.
    public var statistics: TransceiverStatistics { counters.snapshot }

    /// An executor that runs code on the event loop of `peer`'s connection. Code that mostly talks to one peer
    /// can run there (`withTaskExecutorPreference`) so that its sends and the replies it awaits need no thread
    /// hand-off: on a small machine that halves request/reply latency.
    public func taskExecutor(for peer: PeerID) -> (any TaskExecutor)? {
        state.withLock { $0.table.connection(for: peer) }.map { EventLoopTaskExecutor($0.channel.eventLoop) }
    }

    /// Per-peer message counters: (received, sent) over the peer's current connection.
    public func messageCounts(for peer: PeerID) -> (received: Int, sent: Int)? {
        guard let connection = state.withLock({ $0.table.connection(for: peer) }) else { return nil }
        return (connection.messagesIn.load(ordering: .relaxed), connection.messagesOut.load(ordering: .relaxed))
    }

    /// Connected and disconnected events, from the moment of the call. Each access makes a new stream; it
    /// finishes when the transceiver stops.
    public var peerEvents: AsyncStream<PeerEvent> {
        let (stream, continuation) = AsyncStream<PeerEvent>.makeStream()
        let registered = state.withLock { state -> Bool in
            if case .stopped = state.lifecycle { return false }
            let token = state.token()
            state.eventSubscribers[token] = continuation
            continuation.onTermination = { [weak self] _ in
                _ = self?.state.withLock { $0.eventSubscribers.removeValue(forKey: token) }
            }
            return true
        }
        if !registered { continuation.finish() }
        return stream
    }

    // MARK: - Lifecycle

    /// Starts listening and serving in the background; returns once the listener is bound.
    public func start() async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let accepted = state.withLock { state -> Bool in
                guard case .idle = state.lifecycle, state.runTask == nil else { return false }
                state.startWaiters.append(continuation)
                // The one unstructured task of the library: start() exists for callers that have no task
                // tree to put the transceiver in. stop() cancels and awaits it, so it never outlives the owner.
                state.runTask = Task { try await self.run() }
                return true
            }
            if !accepted { continuation.resume(throwing: TransceiverError.alreadyStarted) }
        }
    }

    /// Stops: withdraws the advertisement, closes the listener, says goodbye to every peer, gives queued messages
    /// ``TransceiverConfiguration/shutdownFlushTimeout`` to leave, and returns when everything is closed.
    /// Handlers still running a second after that are cancelled (a handler that ignores cancellation still
    /// holds `stop` up: handlers should be cancellable).
    public func stop() async {
        let task = state.withLock { $0.runTask }
        beginShutdown()
        guard let task else {
            await waitUntilStopped()
            return
        }
        let grace = configuration.shutdownFlushTimeout + .seconds(1)
        await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                _ = try? await task.value
                return true
            }
            group.addTask {
                try? await Task.sleep(for: grace)
                return false
            }
            if await group.next() == false {
                logger.warning("handlers still busy after the shutdown grace period; cancelling them")
                task.cancel()
            }
            group.cancelAll()
        }
    }

    /// For a transceiver driven by `run()` (not `start()`): returns once `run()` has finished.
    private func waitUntilStopped() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let pending = state.withLock { state -> Bool in
                switch state.lifecycle {
                case .idle, .stopped: return false
                case .running, .stopping:
                    state.stoppedWaiters.append(continuation)
                    return true
                }
            }
            if !pending { continuation.resume() }
        }
    }

    /// Runs the transceiver until it is stopped or the calling task is cancelled.
    public func run() async throws {
        let (jobs, jobsContinuation) = AsyncStream<Job>.makeStream()
        try state.withLock { state in
            guard case .idle = state.lifecycle else { throw TransceiverError.alreadyStarted }
            state.lifecycle = .running(jobs: jobsContinuation)
        }
        var server: Listener?
        var controlServer: Listener?
        do {
            let localID = try configuration.identity.resolve()
            state.withLock { $0.localPeerID = localID }
            server = try await bindListener()
            controlServer = try await bindControlSocket()
            let waiters = state.withLock { state in
                state.serverChannel = server?.channel
                state.controlChannel = controlServer?.channel
                state.listeningAddress = server?.channel.localAddress
                defer { state.startWaiters.removeAll() }
                return state.startWaiters
            }
            logger.info(
                "parley transceiver running",
                metadata: [
                    "peer-id": "\(localID)", "name": "\(configuration.name)",
                    "listen": "\(server?.channel.localAddress.map(PeerConnection.describe) ?? "not listening")",
                    "authentication": "\(configuration.sharedSecret == nil ? "none (open)" : "shared secret")",
                ]
            )
            let discovery = try configuration.discovery.map {
                try startDiscovery($0, localID: localID, port: server?.channel.localAddress?.port)
            }
            for waiter in waiters { waiter.resume() }
            // stop() may have come while we were starting.
            if state.withLock({ $0.stopRequested }) { beginShutdown() }

            await withTaskCancellationHandler {
                await withDiscardingTaskGroup { group in
                    for listener in [server, controlServer].compactMap({ $0 }) {
                        group.addTask { await self.acceptLoop(listener, jobs: jobsContinuation) }
                    }
                    if let discovery, let settings = configuration.discovery {
                        group.addTask { await self.runDiscovery(discovery, settings: settings, localID: localID) }
                    }
                    for endpoint in configuration.staticPeers {
                        group.addTask { await self.maintainStaticPeer(endpoint) }
                    }
                    for await job in jobs {
                        if configuration.handlersRunOnEventLoop {
                            let executor = EventLoopTaskExecutor(job.channel.frames.channel.eventLoop)
                            group.addTask(executorPreference: executor) { await self.serve(job) }
                        } else {
                            group.addTask { await self.serve(job) }
                        }
                    }
                }
            } onCancel: {
                self.beginShutdown()
            }
            finishStopping()
        } catch {
            try? await server?.channel.close()
            try? await controlServer?.channel.close()
            let waiters = state.withLock { state in
                state.lifecycle = .stopped
                defer { state.startWaiters.removeAll() }
                return state.startWaiters
            }
            jobsContinuation.finish()
            for waiter in waiters { waiter.resume(throwing: error) }
            finishStopping()
            throw error
        }
    }

    /// A listener yields each accepted connection, or nil for one refused by ``ConnectionAdmission``.
    typealias Listener = NIOAsyncChannel<ConnectionChannel?, Never>

    private func bindListener() async throws -> Listener? {
        guard let host = configuration.listenHost else { return nil }
        let configuration = self.configuration
        let counters = self.counters
        let requests = self.requests
        let admission = self.admission
        do {
            return try await ServerBootstrap(group: group)
                .serverChannelOption(.backlog, value: 256)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
                .childChannelOption(.allowRemoteHalfClosure, value: true)
                .bind(host: host, port: configuration.port) { channel in
                    channel.eventLoop.makeCompletedFuture { () throws -> ConnectionChannel? in
                        guard try admission.admit(channel) else { return nil }
                        return try ChannelSetup.configure(
                            channel, role: .acceptor, sharedSecret: configuration.sharedSecret, requests: requests,
                            configuration: configuration, counters: counters
                        )
                    }
                }
        } catch {
            throw TransceiverError.bindFailed(host: host, port: configuration.port, underlying: String(describing: error))
        }
    }

    /// The control socket: the same protocol on a Unix domain socket, for local tools. Mode 0660, so that only
    /// the owner and its group can drive this node.
    private func bindControlSocket() async throws -> Listener? {
        guard let path = configuration.controlSocketPath else { return nil }
        let configuration = self.configuration
        let counters = self.counters
        let requests = self.requests
        let admission = self.admission
        do {
            try FileManager.default.createDirectory(
                atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true
            )
            let server = try await ServerBootstrap(group: group)
                .childChannelOption(.allowRemoteHalfClosure, value: true)
                .bind(unixDomainSocketPath: path, cleanupExistingSocketFile: true) { channel in
                    channel.eventLoop.makeCompletedFuture { () throws -> ConnectionChannel? in
                        guard try admission.admit(channel) else { return nil }
                        // Local clients: the socket's mode and owner protect it; they are not asked for the secret.
                        return try ChannelSetup.configure(channel, role: .acceptor, sharedSecret: nil, requests: requests, configuration: configuration, counters: counters)
                    }
                }
            guard chmod(path, 0o660) == 0 else {
                try? await server.channel.close()
                throw TransceiverError.bindFailed(host: path, port: 0, underlying: "cannot set mode 0660 (errno \(errno))")
            }
            return server
        } catch let error as TransceiverError {
            throw error
        } catch {
            throw TransceiverError.bindFailed(host: path, port: 0, underlying: String(describing: error))
        }
    }

    private func acceptLoop(
        _ server: Listener,
        jobs: AsyncStream<Job>.Continuation
    ) async {
        do {
            try await server.executeThenClose { inbound in
                for try await child in inbound {
                    guard let child else { continue }
                    if case .terminated = jobs.yield(Job(channel: child)) {
                        try? await child.frames.channel.close()
                    }
                }
            }
        } catch {
            logger.error("listener failed; no new connections will be accepted", metadata: ["error": "\(error)"])
        }
    }

    /// Stops taking new work: closes the listener and every connection (gracefully), finishes the job stream.
    func beginShutdown() {
        let (jobs, server, connections, waiters, discovery, controlChannel) = state.withLock { state in
            guard case .running(let jobs) = state.lifecycle else {
                if case .idle = state.lifecycle, state.runTask != nil { state.stopRequested = true }
                return (
                    AsyncStream<Job>.Continuation?.none, (any Channel)?.none, [PeerConnection](), [GateWaiter](),
                    AvahiDiscovery?.none, (any Channel)?.none
                )
            }
            state.lifecycle = .stopping
            defer { state.gateWaiters.removeAll() }
            return (
                jobs, state.serverChannel, Array(state.connections), Array(state.gateWaiters.values), state.discovery,
                state.controlChannel
            )
        }
        guard let jobs else { return }
        logger.info("parley transceiver stopping", metadata: ["connections": "\(connections.count)"])
        // First withdraw the advertisement, so that nobody discovers a node that is going away.
        discovery?.stop()
        server?.close(promise: nil)
        controlChannel?.close(promise: nil)
        jobs.finish()
        for connection in connections {
            connection.noteEnd("this node (\(configuration.name)) is shutting down")
            let isLegacyApp = connection.peer?.kind == .legacyDebugger
            connection.outbound.finish(
                sending: isLegacyApp ? nil : .close(CloseFrame(code: .goingAway, message: "\(configuration.name) is shutting down")),
                then: .halfClose,
                timeout: configuration.shutdownFlushTimeout,
                reason: TransceiverError.notRunning
            )
        }
        for waiter in waiters { waiter.continuation.resume(throwing: TransceiverError.notRunning) }
    }

    private func finishStopping() {
        let (subscribers, discovery, stoppedWaiters) = state.withLock { state in
            state.lifecycle = .stopped
            state.serverChannel = nil
            defer {
                state.eventSubscribers.removeAll()
                state.discovery = nil
                state.discoveryStatus = .off
                state.stoppedWaiters.removeAll()
            }
            return (Array(state.eventSubscribers.values), state.discovery, state.stoppedWaiters)
        }
        discovery?.stop()
        for subscriber in subscribers { subscriber.finish() }
        for waiter in stoppedWaiters { waiter.resume() }
    }

    // MARK: - Connecting

    /// Connects to a peer and completes the handshake. Returns the peer, also when the two sides connected to
    /// each other at once and the other connection was kept.
    @discardableResult
    public func connect(to endpoint: Endpoint) async throws -> Peer {
        guard case .running = state.withLock({ $0.lifecycle }) else { throw TransceiverError.notRunning }
        let configuration = self.configuration
        let counters = self.counters
        let requests = self.requests
        let channel: ConnectionChannel
        do {
            channel = try await ClientBootstrap(group: group)
                .channelOption(.tcpOption(.tcp_nodelay), value: 1)
                .channelOption(.allowRemoteHalfClosure, value: true)
                .connectTimeout(TimeAmount(configuration.handshakeTimeout))
                .connect(host: endpoint.host, port: endpoint.port) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try ChannelSetup.configure(
                            channel, role: .dialer, sharedSecret: configuration.sharedSecret, requests: requests,
                            configuration: configuration, counters: counters
                        )
                    }
                }
        } catch {
            throw TransceiverError.connectFailed(endpoint, underlying: String(describing: error))
        }
        return try await handOver(channel, endpoint: endpoint)
    }

    /// Gives a freshly dialled channel to `run()`'s task group and waits for its handshake.
    private func handOver(_ channel: ConnectionChannel, endpoint: Endpoint) async throws -> Peer {
        // The dialer speaks first, straight away: the acceptor's handshake deadline runs from the moment it
        // accepted, and must not depend on how soon the serving task gets scheduled here.
        var handshake = makeHandshake(for: channel.connection)
        if case .send(let frames) = handshake.start() { write(frames, on: channel.connection) }
        return try await withCheckedThrowingContinuation { continuation in
            let jobs = state.withLock { state -> AsyncStream<Job>.Continuation? in
                if case .running(let jobs) = state.lifecycle { return jobs }
                return nil
            }
            let job = Job(channel: channel, endpoint: endpoint, handshake: handshake, handshakeDone: continuation)
            if jobs == nil || jobs.map({ if case .terminated = $0.yield(job) { true } else { false } }) == true {
                channel.frames.channel.close(promise: nil)
                continuation.resume(throwing: TransceiverError.notRunning)
            }
        }
    }

    /// Connects to a node's control socket (a local parleyd) and completes the handshake.
    @discardableResult
    public func connect(toUnixSocket path: String) async throws -> Peer {
        guard case .running = state.withLock({ $0.lifecycle }) else { throw TransceiverError.notRunning }
        let configuration = self.configuration
        let counters = self.counters
        let requests = self.requests
        let endpoint = Endpoint(host: "unix:" + path, port: 0)
        let channel: ConnectionChannel
        do {
            channel = try await ClientBootstrap(group: group)
                .channelOption(.allowRemoteHalfClosure, value: true)
                .connect(unixDomainSocketPath: path) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try ChannelSetup.configure(channel, role: .dialer, sharedSecret: nil, requests: requests, configuration: configuration, counters: counters)
                    }
                }
        } catch {
            throw TransceiverError.connectFailed(endpoint, underlying: String(describing: error))
        }
        return try await handOver(channel, endpoint: endpoint)
    }

    func emit(_ event: PeerEvent, in state: inout State) {
        for subscriber in state.eventSubscribers.values { subscriber.yield(event) }
    }
}
