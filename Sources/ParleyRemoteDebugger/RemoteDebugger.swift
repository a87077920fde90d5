import Foundation
import Logging
import NIOCore
import Parley
import ParleyDebugger
import Synchronization

/// Sends an app's state changes to the remote state debugger (parleyd, or the original Swift Talk debugger) and
/// applies the states it sends back: time travel.
///
/// ```swift
/// import ParleyAvahi   // the discovery backend
///
/// struct AppState: Codable, Sendable { var folders: [String] }
/// enum AppAction: Sendable { case addFolder(String), mouseMoved(x: Int, y: Int) }
///
/// extension ActionFilter where Action == AppAction {
///     static var pointer: Self { Self { if case .mouseMoved = $0 { true } else { false } } }
/// }
///
/// let debugger = RemoteDebugger<AppState, AppAction>(
///     configuration: .init(appName: "Recordings", debugger: .discover(backend: .avahi), filter: .allExcept(.pointer))
/// )
/// debugger.onRestore { state in
///     await MainActor.run { store.replaceState(with: state) }
/// }
/// try debugger.start()   // finds parleyd on _debug._tcp, connects, reconnects
///
/// // On every state change; returns at once, whatever the network does:
/// debugger.write(action: action, state: newState, snapshot: window.pngData())
///
/// await debugger.stop()  // on exit: queued records get `flushTimeout` to leave
/// ```
///
/// `write` never blocks or slows the caller: it applies the filter, puts the values on a bounded queue and returns.
/// Describing the action, encoding the state and sending happen on a background task. When the debugger is slow
/// or away the queue keeps the newest ``RemoteDebuggerConfiguration/queueCapacity`` records and counts the ones it
/// drops (``droppedCount``).
///
/// `debugger:` takes a known address (`.endpoint(host:port:)`) instead of discovery, and `wireProtocol:` the
/// original Swift Talk framing (`.originalFraming`: 206 frames with base64 screenshots) for a debugger
/// that speaks nothing else.
///
/// Generic over the state (encoded for the debugger, decoded when it comes back) and the action (filtered and
/// described on the way out), so an app hands over its own values and the client does the rest.
///
/// Lifecycle, as for ``Transceiver``: ``run()`` is the structured form (it returns when the client stops; cancel
/// it or call ``stop()``); ``start()`` runs it in a task the client owns, which ``stop()`` awaits. A client runs
/// once.
public final class RemoteDebugger<State: Codable & Sendable, Action: Sendable>: Sendable {
    public let configuration: RemoteDebuggerConfiguration<Action>
    private let logger: Logger
    private let core: Core
    private let transport: any DebuggerTransport
    /// Signals the sender that there is work: a record was queued, or a debugger connected. Holding at most one
    /// signal keeps `write` O(1) however fast it is called.
    private let wakeups: AsyncStream<Void>
    /// Finished by `stop()`: starts the bounded flush.
    private let stopSignal: AsyncStream<Void>
    private let stopContinuation: AsyncStream<Void>.Continuation

    /// Why the paired debuggers cannot be used, when the trust needs them: `start()` and `run()` throw it.
    private let deviceProblem: DeviceIdentityError?

    public init(configuration: RemoteDebuggerConfiguration<Action>) {
        self.configuration = configuration
        self.logger = configuration.logger
        let (wakeups, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        self.wakeups = wakeups
        (stopSignal, stopContinuation) = AsyncStream.makeStream()
        let core = Core(capacity: configuration.queueCapacity, wake: wake, logger: configuration.logger)
        self.core = core
        // The transport calls back into the core, not into the client: the client owns the transport, and a
        // reference back to it would keep both alive forever.
        let events = TransportEvents(
            connectivityChanged: { wake.yield() },
            stateReceived: { json, source in await core.restore(json, from: source) },
            hasPendingRecords: { core.shared.withLock { !$0.queue.isEmpty } }
        )
        switch configuration.wireProtocol {
        case .parley:
            var paired: PairedDebuggers?
            var problem: DeviceIdentityError?
            do {
                paired = try configuration.trust.pairedDebuggers(
                    directory: configuration.deviceDirectory, appName: configuration.appName, logger: configuration.logger)
            } catch {
                // Said by start() and run(): a client that cannot keep its promise to send only to its paired
                // debuggers does not run.
                problem = error
            }
            deviceProblem = problem
            transport = ParleyDebuggerTransport(
                appName: configuration.appName, location: configuration.debugger, identity: configuration.identity,
                sharedSecret: configuration.sharedSecret, paired: paired, eventLoopGroup: configuration.eventLoopGroup,
                logger: configuration.logger, events: events
            )
        case .originalFraming:
            deviceProblem = nil
            transport = OriginalFramingTransport(
                location: configuration.debugger, maximumRecordSize: configuration.maximumRecordSize,
                eventLoopGroup: configuration.eventLoopGroup, logger: configuration.logger, events: events
            )
        }
    }

    // MARK: - Recording

    /// Records a state change: the action that caused it, the new state and, optionally, a screenshot as
    /// already-encoded PNG bytes. Returns at once; never throws and never waits for the network.
    ///
    /// Filtered-out actions are counted and forgotten. Before `start()` records wait in the queue; after `stop()`
    /// they are counted as dropped.
    public func write(action: Action, state: State, snapshot: Data? = nil) {
        guard configuration.filter(action) else {
            core.shared.withLock { $0.statistics.filtered += 1 }
            return
        }
        if core.enqueue(Entry(action: action, state: state, snapshot: snapshot)) {
            transport.recordQueued()
        }
    }

    /// Handles states the debugger sends back (time travel): `handler` gets each one decoded as `State`, one at a
    /// time, in the order they arrive, on a background task (hop to the main actor to apply it to UI state).
    /// A state that does not decode is logged and counted, not delivered. Setting a handler replaces the last one.
    public func onRestore(_ handler: @escaping @Sendable (State) async -> Void) {
        core.restoreHandler.withLock { $0 = handler }
    }

    /// Counters of filtered, dropped, sent and failed records, and of restored states.
    public var statistics: RemoteDebuggerStatistics { core.shared.withLock { $0.statistics } }

    /// Records lost without being sent; see ``RemoteDebuggerStatistics/dropped``.
    public var droppedCount: Int { core.shared.withLock { $0.statistics.dropped } }

    /// Records not sent because the filter excluded their action.
    public var filteredCount: Int { core.shared.withLock { $0.statistics.filtered } }

    /// Records waiting in the queue.
    public var pendingCount: Int { core.shared.withLock { $0.queue.count } }

    /// Whether a debugger is connected (and, on Parley's protocol, accepts records) right now.
    public var isConnected: Bool { transport.hasDebugger }

    /// The transceiver that carries the records on Parley's protocol (nil on the original framing). Other traffic
    /// for parleyd can share it — `TelemetryExporter(sharing:)` sends the app's logs and spans over it — so that
    /// parleyd, which keeps one session per peer, shows them in the same session as the states. Its lifecycle
    /// stays this client's: ``start()`` runs it and ``stop()`` stops it.
    public var transceiver: Transceiver? { (transport as? ParleyDebuggerTransport)?.transceiver }

    // MARK: - Lifecycle

    /// Runs the client in a task it owns and returns at once, so that it can be called from synchronous app code.
    /// ``stop()`` ends that task. A failure to start discovery or to read the peer id file is logged.
    /// - Throws: ``RemoteDebuggerError`` if the configuration is invalid or the client has already been started.
    public func start() throws(RemoteDebuggerError) {
        try configuration.validate()
        if let deviceProblem { throw .deviceIdentity(deviceProblem) }
        try core.shared.withLock { (shared) throws(RemoteDebuggerError) in
            guard case .idle = shared.lifecycle, shared.runTask == nil else { throw .alreadyStarted }
            // The one unstructured task of this library, for callers with no task tree to put the client in;
            // stop() awaits it, so it never outlives the client's owner.
            shared.runTask = Task { [logger] in
                do {
                    try await self.run()
                } catch {
                    // Nobody awaits this task until stop(): the log is how the app learns that recording ended.
                    logger.error("remote debugger client stopped", metadata: ["error": "\(error)"])
                    throw error
                }
            }
        }
    }

    /// Stops: records still queued get ``RemoteDebuggerConfiguration/flushTimeout`` to reach a connected debugger,
    /// then the connection closes. Returns when everything has ended. Later writes are counted as dropped.
    public func stop() async {
        let task = core.shared.withLock { shared -> Task<Void, any Error>? in
            switch shared.lifecycle {
            case .idle where shared.runTask == nil:
                shared.lifecycle = .stopped
            case .idle, .running:
                shared.lifecycle = .stopping
            case .stopping, .stopped:
                break
            }
            return shared.runTask
        }
        stopContinuation.finish()
        core.wake.finish()
        if let task {
            _ = try? await task.value
        } else {
            await core.waitUntilStopped()
        }
    }

    /// Runs the client until ``stop()`` is called or the calling task is cancelled: connects (and reconnects) to
    /// the debugger, sends queued records, hands states sent back to the ``onRestore(_:)`` handler.
    /// - Throws: ``RemoteDebuggerError`` for an invalid configuration or a second run; the transport's error if it
    ///   cannot start at all (the peer id file cannot be read, the discovery backend cannot be started).
    public func run() async throws {
        try configuration.validate()
        if let deviceProblem { throw RemoteDebuggerError.deviceIdentity(deviceProblem) }
        let proceed = try core.shared.withLock { (shared) throws(RemoteDebuggerError) -> Bool in
            switch shared.lifecycle {
            case .idle:
                shared.lifecycle = .running
                return true
            // stop() came before the task start() created got here.
            case .stopping where shared.runTask != nil:
                return false
            default:
                throw .alreadyStarted
            }
        }
        defer { core.finish() }
        guard proceed else { return }
        try await withThrowingTaskGroup(of: Child.self) { group in
            group.addTask {
                try await self.transport.run()
                return .transport
            }
            group.addTask {
                await self.sendUntilStopped()
                self.transport.shutdown()
                return .sender
            }
            group.addTask {
                await self.shutDownTransportAfterFlushTimeout()
                return .watchdog
            }
            var finished: Set<Child> = []
            while let child = try await group.next() {
                finished.insert(child)
                if finished.isSuperset(of: [.transport, .sender]) { group.cancelAll() }
            }
        }
    }

    private enum Child: Sendable, Hashable {
        case transport
        case sender
        case watchdog
    }

    /// Sends queued records whenever there is a debugger to send them to, until `stop()` (after a last pass over
    /// what is still queued) or cancellation.
    private func sendUntilStopped() async {
        let encoder = RecordEncoder<State>(wireProtocol: configuration.wireProtocol)
        for await _ in wakeups {
            await sendPending(encoder)
        }
        if !Task.isCancelled {
            await sendPending(encoder)
        }
    }

    /// After `stop()`, records still queued get the flush timeout; then the transport is shut down, which fails
    /// any send still waiting (a debugger that stopped reading) so that `stop()` returns.
    private func shutDownTransportAfterFlushTimeout() async {
        for await _ in stopSignal {}
        guard !Task.isCancelled else { return }
        try? await Task.sleep(for: configuration.flushTimeout)
        guard !Task.isCancelled else { return }
        logger.info(
            "records still queued after the flush timeout; closing the connection",
            metadata: ["pending": "\(pendingCount)"]
        )
        transport.shutdown()
    }

    private func sendPending(_ encoder: RecordEncoder<State>) async {
        while !Task.isCancelled, transport.hasDebugger, let entry = core.shared.withLock({ $0.queue.popFirst() }) {
            let sent: Bool
            do {
                let record = try encoder.encode(
                    action: configuration.describeAction(entry.action), state: entry.state, snapshot: entry.snapshot
                )
                try await transport.send(record)
                sent = true
            } catch {
                logger.info("state record not sent", metadata: ["error": "\(error)"])
                sent = false
            }
            core.shared.withLock { sent ? ($0.statistics.sent += 1) : ($0.statistics.failed += 1) }
        }
    }

    // MARK: - State shared with the transport

    fileprivate struct Entry: Sendable {
        var action: Action
        var state: State
        var snapshot: Data?
    }

    fileprivate enum Lifecycle {
        case idle
        case running
        case stopping
        case stopped
    }

    fileprivate struct Shared {
        var lifecycle = Lifecycle.idle
        var queue: RecordQueue<Entry>
        var statistics = RemoteDebuggerStatistics()
        var runTask: Task<Void, any Error>?
        var stoppedWaiters: [CheckedContinuation<Void, Never>] = []
    }

    /// The queue, the counters and the restore path: what both the client and its transport's callbacks use.
    private final class Core: Sendable {
        let shared: Mutex<Shared>
        let restoreHandler = Mutex<(@Sendable (State) async -> Void)?>(nil)
        let wake: AsyncStream<Void>.Continuation
        let logger: Logger

        init(capacity: Int, wake: AsyncStream<Void>.Continuation, logger: Logger) {
            self.shared = Mutex(Shared(queue: RecordQueue(capacity: capacity)))
            self.wake = wake
            self.logger = logger
        }

        /// Queues `entry` unless the client has stopped; returns whether it did.
        func enqueue(_ entry: Entry) -> Bool {
            let accepted = shared.withLock { shared -> Bool in
                switch shared.lifecycle {
                case .idle, .running:
                    if shared.queue.append(entry) { shared.statistics.dropped += 1 }
                    return true
                case .stopping, .stopped:
                    shared.statistics.dropped += 1
                    return false
                }
            }
            if accepted { wake.yield() }
            return accepted
        }

        func finish() {
            let waiters = shared.withLock { shared in
                shared.lifecycle = .stopped
                shared.statistics.dropped += shared.queue.removeAll()
                defer { shared.stoppedWaiters.removeAll() }
                return shared.stoppedWaiters
            }
            wake.finish()
            for waiter in waiters { waiter.resume() }
        }

        /// For a client driven by `run()`: returns once `run()` has finished.
        func waitUntilStopped() async {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let pending = shared.withLock { shared -> Bool in
                    if case .stopped = shared.lifecycle { return false }
                    shared.stoppedWaiters.append(continuation)
                    return true
                }
                if !pending { continuation.resume() }
            }
        }

        func restore(_ json: ByteBuffer, from source: String) async {
            guard let handler = restoreHandler.withLock({ $0 }) else {
                shared.withLock { $0.statistics.restoreFailures += 1 }
                logger.info(
                    "the debugger sent a state back but no onRestore handler is set; ignored", metadata: ["from": "\(source)"]
                )
                return
            }
            let state: State
            do {
                state = try JSONDecoder().decode(State.self, from: Data(json.readableBytesView))
            } catch {
                shared.withLock { $0.statistics.restoreFailures += 1 }
                logger.info(
                    "the state sent back by the debugger does not decode as \(State.self); ignored",
                    metadata: ["from": "\(source)", "bytes": "\(json.readableBytes)", "error": "\(error)"]
                )
                return
            }
            shared.withLock { $0.statistics.restored += 1 }
            await handler(state)
        }
    }
}
