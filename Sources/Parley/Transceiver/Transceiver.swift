import Foundation
import Logging
import NIOCore
import NIOPosix
import ParleyDiscovery
import ParleyWire
import ServiceLifecycle
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
/// Lifecycle (``LifecycleStateMachine``): idle → starting → running → draining → stopped. ``run()`` is the
/// structured form and makes the transceiver a `Service`: put it in a `ServiceGroup`, and graceful shutdown drains
/// it (replies being computed are sent, every peer is told, queues get ``TransceiverConfiguration/shutdownFlushTimeout``
/// to leave). ``start()``/``stop()`` are the convenience form for scripts and tests.
///
/// The parts, each in its own file: ``PeerRegistry`` (who is connected, peer events, the peer gate),
/// ``Router`` (type name → handler), ``PendingRequests`` (replies awaited), ``DiscoveryCoordinator`` (dialling what
/// discovery finds), ``ConnectionAdmission`` (limits at accept), and per connection ``PeerConnection`` with the
/// channel handlers ``ChannelSetup`` installs.
///
/// Its own code is split by concern, one extension a file: this file holds its state and lifecycle;
/// `+Listening` binds the sockets and accepts; `+Dialling` connects out and keeps static peers connected;
/// `+Serving` runs one connection from accept to close; `+Handshake` takes it to a registered peer; `+Delivery`
/// reads its messages and hands them to their handlers; `+Replies` answers requests and awaits replies;
/// `+Sending` and `+Handlers` are the public API for sending and for registering handlers.
public final class Transceiver: Service, Sendable {
    public let configuration: TransceiverConfiguration
    let logger: Logger
    let router = Router()
    let registry = PeerRegistry<PeerConnection>()
    let counters: StatisticsCounters
    let requests = PendingRequests()
    let admission: ConnectionAdmission
    /// Builds every connection's pipeline, with the node's memory budget.
    let setup: ChannelSetup
    /// For the warnings a remote host can trigger at will (bad handshakes, protocol errors, refusals, unhandled
    /// messages): see ``LogThrottle``.
    public let logThrottle: LogThrottle
    let lifecycle = Mutex(Lifecycle())
    var group: any EventLoopGroup { configuration.eventLoopGroup }

    public init(configuration: TransceiverConfiguration) {
        self.configuration = configuration
        self.logger = configuration.logger
        counters = StatisticsCounters()
        logThrottle = LogThrottle(timers: configuration.eventLoopGroup.next())
        admission = ConnectionAdmission(configuration: configuration, counters: counters, logThrottle: logThrottle)
        let (counters, logThrottle) = (self.counters, self.logThrottle)
        setup = ChannelSetup(
            configuration: configuration, requests: requests, counters: counters, logThrottle: logThrottle,
            budget: configuration.memoryBudget.map {
                MemoryBudget(capacity: $0, logger: configuration.logger, logThrottle: logThrottle, counters: counters)
            },
            admission: admission,
            deviceTLS: configuration.devices.map { devices in Result { try DeviceTLS(devices) } }
        )
    }

    // MARK: - State

    /// What a running transceiver owns and a draining one closes.
    struct Running: Sendable {
        var jobs: AsyncStream<Job>.Continuation
        var listeners: [any Channel]
        var discovery: DiscoveryCoordinator?
    }

    typealias Waiter = CheckedContinuation<Void, any Error>

    struct Lifecycle {
        var machine = LifecycleStateMachine<Running, Waiter>()
        /// Known from `starting` on.
        var localPeerID: PeerID?
        var listeningAddress: SocketAddress?
        var discovery: DiscoveryCoordinator?
        /// The task `start()` launched.
        var runTask: Task<Void, any Error>?
    }

    struct Job: Sendable {
        var channel: ConnectionChannel
        var endpoint: Endpoint?
        /// A dialer's handshake, already started (its hello is on its way); `nil` for accepted connections.
        var handshake: HandshakeStateMachine?
        /// The dialer's `connect` waits here for the handshake's result.
        var handshakeDone: CheckedContinuation<Peer, any Error>?
    }

    // MARK: - Public read-only state

    /// This node's stable id. Resolved (and, the first time, persisted) when the transceiver starts.
    public var localPeerID: PeerID? { lifecycle.withLock { $0.localPeerID } }

    /// The TCP port the listener is bound to, once running (useful with port 0).
    public var listeningPort: Int? { lifecycle.withLock { $0.listeningAddress?.port } }

    /// The peers currently connected, oldest first.
    public var peers: [Peer] { registry.peers }

    /// Changes whenever peers connect or leave. A cache derived from ``peers`` (such as a routing decision) is
    /// still right while this stays the same; read it before reading ``peers``.
    public var peersVersion: UInt64 { registry.version }

    /// The connections open now, handshake completed or not: over TCP, and from local clients on the control socket.
    public var openConnections: (tcp: Int, local: Int) {
        let connections = registry.connections
        let local = connections.filter { $0.channel.isLocalSocket }.count
        return (connections.count - local, local)
    }

    /// Counters of what has been sent, received and dropped.
    public var statistics: TransceiverStatistics { counters.snapshot }

    /// Whether the transceiver is running (listening and serving; not yet draining).
    public var isRunning: Bool { lifecycle.withLock { $0.machine.isRunning } }

    /// An executor that runs code on the event loop of `peer`'s connection. Code that mostly talks to one peer
    /// can run there (`withTaskExecutorPreference`) so that its sends and the replies it awaits need no thread
    /// hand-off: on a small machine that takes some 10 – 20 µs off each round trip. An app whose tasks all do little
    /// between awaits can get the same everywhere by making NIO's event loops Swift's global executor, first thing
    /// in `main` (`NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()`);
    /// then no task may block (performance.md).
    public func taskExecutor(for peer: PeerID) -> (any TaskExecutor)? {
        registry.connection(for: peer).map { EventLoopTaskExecutor($0.channel.eventLoop) }
    }

    /// Per-peer message counters: (received, sent) over the peer's current connection.
    public func messageCounts(for peer: PeerID) -> (received: Int, sent: Int)? {
        guard let connection = registry.connection(for: peer) else { return nil }
        return (connection.messagesIn.load(ordering: .relaxed), connection.messagesOut.load(ordering: .relaxed))
    }

    /// Connected and disconnected events, from the moment of the call. Each access makes a new stream; it
    /// finishes when the transceiver stops.
    public var peerEvents: AsyncStream<PeerEvent> { registry.events() }

    // MARK: - Lifecycle

    /// Starts listening and serving in the background; returns once the listener is bound.
    public func start() async throws {
        try await withCheckedThrowingContinuation { (continuation: Waiter) in
            let action = lifecycle.withLock { state -> LifecycleStateMachine<Running, Waiter>.StartAction in
                let action = state.machine.start(continuation)
                if case .launch = action {
                    // The one unstructured task of the library: start() exists for callers that have no task
                    // tree to put the transceiver in. stop() cancels and awaits it, so it never outlives the owner.
                    state.runTask = Task { try await self.run() }
                }
                return action
            }
            if case .fail(let error) = action { continuation.resume(throwing: error) }
        }
    }

    /// Returns once the transceiver, run by another task (a `ServiceGroup`), is listening; throws
    /// ``TransceiverError/notRunning`` if it stopped or failed to start.
    public func waitUntilListening() async throws {
        try await withCheckedThrowingContinuation { (continuation: Waiter) in
            let wait = lifecycle.withLock { $0.machine.waitUntilListening(continuation) }
            switch wait {
            case .now: continuation.resume()
            case .wait: break
            case .fail(let error): continuation.resume(throwing: error)
            }
        }
    }

    /// Stops: withdraws the advertisement, closes the listener, lets replies being computed go out, says goodbye to
    /// every peer, gives queued messages ``TransceiverConfiguration/shutdownFlushTimeout`` to leave, and returns when
    /// everything is closed and the advertisement is gone (from a DNS server: once it answered, or nsupdate gave
    /// up). Handlers still running a second after the flush timeout (counted once the advertisement is gone) are
    /// cancelled (a handler that ignores cancellation still holds `stop` up: handlers should be cancellable).
    public func stop() async {
        let (task, discovery) = lifecycle.withLock { ($0.runTask, $0.discovery) }
        beginShutdown()
        guard let task else {
            await waitUntilStopped()
            return
        }
        // The advertisement's removal (from a DNS server: bounded by nsupdate's own timeouts) is not a handler: the
        // grace period starts after it. The peers are meanwhile being told goodbye.
        await discovery?.finished()
        let grace = configuration.shutdownFlushTimeout + .seconds(1)
        await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                _ = try? await task.value
                return true
            }
            group.addTask {
                // A real wait by design: the grace period is a bound on handlers, not an event.
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
        try? await withCheckedThrowingContinuation { (continuation: Waiter) in
            let waits = lifecycle.withLock { $0.machine.waitUntilStopped(continuation) }
            if !waits { continuation.resume() }
        }
    }

    /// Runs the transceiver until it is stopped, its task is cancelled, or (in a `ServiceGroup`) graceful shutdown.
    public func run() async throws {
        let (jobs, jobsContinuation) = AsyncStream<Job>.makeStream()
        try lifecycle.withLock { state throws(TransceiverError) in try state.machine.runBegins() }
        var listeners: [Listener] = []
        var discovery: DiscoveryCoordinator?
        let network = configuration.discovery != nil || configuration.listenInterfaces != nil
            ? await NetworkMonitor.started(logger: logger) : nil
        defer { network?.stop() }
        var identity: ResolvedIdentity?
        defer { identity?.release() }
        do {
            try TransportBootstraps.check(group)
            if case .failure(let error) = setup.deviceTLS { throw TransceiverError.unusableDeviceIdentity(String(describing: error)) }
            let resolved = try await ResolvedIdentity.resolve(configuration.identity)
            identity = resolved
            let localID = resolved.id
            if case .persisted(let first) = configuration.identity, let path = resolved.path, path != first {
                logger.notice(
                    "another copy of this app runs on this host with its peer id; this copy has an id of its own",
                    metadata: ["peer-id-file": "\(path)"]
                )
            }
            lifecycle.withLock { $0.localPeerID = localID }
            let server = try await bindListener(network: network)
            if let server { listeners.append(server) }
            if let control = try await bindControlSocket() { listeners.append(control) }
            lifecycle.withLock { $0.listeningAddress = server?.channel.localAddress }
            logger.info(
                "parley transceiver running",
                metadata: [
                    "peer-id": "\(localID)", "name": "\(configuration.name)",
                    "listen": "\(server?.channel.localAddress.map(PeerConnection.describe) ?? "not listening")",
                    "authentication": "\(authenticationDescription)",
                ]
            )
            discovery = try configuration.discovery.map { settings in
                try startDiscovery(settings, localID: localID, port: server?.channel.localAddress?.port, network: network)
            }
            let running = Running(jobs: jobsContinuation, listeners: listeners.map(\.channel), discovery: discovery)
            let action = lifecycle.withLock { state in
                state.discovery = discovery
                return state.machine.listening(running)
            }
            switch action {
            case .serve(let waiters):
                for waiter in waiters { waiter.resume() }
            case .serveThenDrain(let waiters, let running):
                for waiter in waiters { waiter.resume() }
                drain(running)
            }
        } catch {
            for listener in listeners { try? await listener.channel.close() }
            discovery?.stop()
            await discovery?.finished()
            jobsContinuation.finish()
            let waiters = lifecycle.withLock { $0.machine.failed() }
            for waiter in waiters { waiter.resume(throwing: error) }
            registry.close()
            registry.finish()
            throw error
        }

        let (listening, coordinator) = (listeners, discovery)
        await withGracefulShutdownHandler {
            await withTaskCancellationHandler {
                await withDiscardingTaskGroup { group in
                    for listener in listening {
                        group.addTask { await self.acceptLoop(listener, jobs: jobsContinuation) }
                    }
                    group.addTask { await self.keepDialling(discovery: coordinator, network: network) }
                    for await job in jobs {
                        if configuration.handlersRunOnEventLoop {
                            let executor = EventLoopTaskExecutor(job.channel.channel.eventLoop)
                            group.addTask(executorPreference: executor) { await self.serve(job) }
                        } else {
                            group.addTask { await self.serve(job) }
                        }
                    }
                }
            } onCancel: {
                self.beginShutdown()
            }
        } onGracefulShutdown: {
            self.beginShutdown()
        }
        let waiters = lifecycle.withLock { state in
            state.discovery = nil
            return state.machine.drained()
        }
        registry.finish()
        logger.info("parley transceiver stopped")
        for waiter in waiters { waiter.resume() }
    }

    /// Stop, cancellation or graceful shutdown: lets the state machine decide, then drains if it says so.
    func beginShutdown() {
        let action = lifecycle.withLock { $0.machine.stop() }
        if case .drain(let running) = action { drain(running) }
    }

    /// Stops taking new work — withdraws the advertisement, closes the listeners, fails the peer gate — and drains
    /// every connection: a reply being computed still goes out, then the peer is told and the connection closes
    /// once its queue is written (bounded by the flush timeout).
    private func drain(_ running: Running) {
        let connections = registry.connections
        logger.info("parley transceiver stopping", metadata: ["connections": "\(connections.count)"])
        // First withdraw the advertisement, so that nobody discovers a node that is going away.
        running.discovery?.stop()
        for listener in running.listeners { listener.close(promise: nil) }
        running.jobs.finish()
        registry.close()
        for connection in connections where connection.requestDrain() {
            finishForShutdown(connection)
        }
    }

    /// The last words on a drained connection: goodbye, then a half-close, so that what is queued still arrives.
    func finishForShutdown(_ connection: PeerConnection) {
        connection.noteEnd(.shuttingDown)
        connection.outbound.finish(
            sending: .close(CloseFrame(code: .goingAway, message: "\(configuration.name) is shutting down")),
            then: .halfClose,
            timeout: configuration.shutdownFlushTimeout,
            reason: TransceiverError.notRunning
        )
    }
}

extension Transceiver {
    /// How this node's TCP peers authenticate, for its log: the mode, and with devices its own fingerprint.
    var authenticationDescription: String {
        if let devices = configuration.devices { return "device certificates over TLS (this device: \(devices.identity.fingerprint.short))" }
        return configuration.sharedSecret == nil ? "none (open)" : "shared secret"
    }
}
