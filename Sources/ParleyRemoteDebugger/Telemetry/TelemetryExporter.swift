import Foundation
import Logging
import NIOCore
import Parley
import ParleyTelemetry
import Synchronization

/// Sends an app's log records and finished spans to parleyd, in batches, off the app's path: what
/// `ParleyLogHandler` (swift-log) and `ParleyTracer` (swift-distributed-tracing) hand over.
///
/// ```swift
/// // Most apps never name it: the handler and the tracer share one exporter per app name and location.
/// LoggingSystem.bootstrap { ParleyLogHandler(label: $0, appName: "Listr", debugger: .discover(backend: .avahi), level: .info) }
/// InstrumentationSystem.bootstrap(ParleyTracer(appName: "Listr", debugger: .discover(backend: .avahi)))
///
/// // An app that records states too puts its logs and spans in the same parleyd session:
/// let telemetry = TelemetryExporter(sharing: debugger)
/// try telemetry.start()
/// LoggingSystem.bootstrap { ParleyLogHandler(label: $0, exporter: telemetry, level: .info) }
/// ```
///
/// ``enqueue(_:redacting:)`` is O(1) and never waits: it puts the record on a bounded queue under a lock and
/// wakes the sender only when the sender is idle and a debugger is connected. The queue keeps the newest
/// ``TelemetryExporterConfiguration/queueCapacity`` records and counts the ones it drops (``droppedCount``),
/// whether the debugger is slow, stalled or absent. A background task takes up to
/// ``TelemetryExporterConfiguration/maximumBatchRecords`` records at a time, cuts them to the limits, encodes
/// them as one `parley.telemetry.Batch` and sends it to every connected peer whose hello accepts that type.
///
/// Lifecycle, as for `RemoteDebugger`: ``run()`` is the structured form (it returns when the exporter stops;
/// cancel it or call ``stop()``), ``start()`` runs it in a task the exporter owns. An exporter runs once. Records
/// given before it starts wait in the queue.
public final class TelemetryExporter: Sendable {
    /// The label of the exporter's own logger; records written under it are not exported.
    public static let loggerLabel = "parley.telemetry"

    public let configuration: TelemetryExporterConfiguration
    private let logger: Logger
    private let transceiver: Transceiver
    /// Whether the exporter runs and stops ``transceiver`` (`.debugger`), or only sends over it (`.transceiver`).
    private let ownsTransceiver: Bool
    /// Why the paired debuggers cannot be used, when the trust needs them: `start()` and `run()` throw it.
    private let deviceProblem: DeviceIdentityError?
    private let state: Mutex<State>
    /// Wakes the sender: a record was queued while it was idle, a peer came or went, or `stop()` was called. At
    /// most one wake-up is held, so waking is O(1) however often it happens.
    private let wakeups: AsyncStream<Void>
    private let wake: AsyncStream<Void>.Continuation
    /// Finished by `stop()`: starts the flush timeout.
    private let stopSignal: AsyncStream<Void>
    private let stopContinuation: AsyncStream<Void>.Continuation

    public init(configuration: TelemetryExporterConfiguration) {
        self.configuration = configuration
        logger = configuration.logger
        switch configuration.destination {
        case .debugger(let location):
            var paired: PairedDebuggers?
            do {
                paired = try configuration.trust.pairedDebuggers(
                    directory: configuration.deviceDirectory, appName: configuration.appName, logger: configuration.logger)
                deviceProblem = nil
            } catch {
                deviceProblem = error
            }
            transceiver = Transceiver(
                configuration: ParleyDebuggerTransport.transceiverConfiguration(
                    appName: configuration.appName, location: location, identity: configuration.identity,
                    sharedSecret: configuration.sharedSecret, paired: paired, eventLoopGroup: configuration.eventLoopGroup,
                    logger: configuration.logger
                )
            )
            ownsTransceiver = true
        case .transceiver(let shared):
            transceiver = shared
            ownsTransceiver = false
            deviceProblem = nil
        }
        // A few hundred records is what waits at most while a debugger keeps up; the queue grows to its capacity
        // only when it does not.
        state = Mutex(State(queue: RecordQueue(capacity: configuration.queueCapacity, reserving: 256)))
        (wakeups, wake) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
        (stopSignal, stopContinuation) = AsyncStream.makeStream()
    }

    /// Records for the debugger at `debugger`, over a connection of the exporter's own.
    public convenience init(appName: String, debugger: DebuggerLocation) {
        self.init(configuration: TelemetryExporterConfiguration(appName: appName, debugger: debugger))
    }

    /// Records over `debugger`'s own connection, so that parleyd, which keeps one session per peer, shows the
    /// app's logs and spans in the session of its states. On the original framing (no Parley connection to share)
    /// the exporter makes its own connection to the same place. Start it (and stop it before the debugger).
    public convenience init<State, Action>(sharing debugger: RemoteDebugger<State, Action>, queueCapacity: Int = 10_000) {
        let destination: TelemetryExporterConfiguration.Destination = debugger.transceiver.map { .transceiver($0) } ?? .debugger(debugger.configuration.debugger)
        self.init(
            configuration: TelemetryExporterConfiguration(
                appName: debugger.configuration.appName, destination: destination, queueCapacity: queueCapacity,
                sharedSecret: debugger.configuration.sharedSecret, trust: debugger.configuration.trust,
                deviceDirectory: debugger.configuration.deviceDirectory
            )
        )
    }

    // MARK: - The process-wide exporters

    private static let sharedExporters = Mutex<[String: TelemetryExporter]>([:])

    /// The process's exporter for `appName`, `debugger` and `trust`, made and started on first use:
    /// `ParleyLogHandler` and `ParleyTracer` built with an app name and a location use it, so that both share one
    /// connection. A failure to start is logged (``TelemetryExporter/loggerLabel``); records are then dropped and
    /// counted.
    public static func shared(appName: String, debugger: DebuggerLocation, trust: DebuggerTrust = .paired) -> TelemetryExporter {
        let key = "\(appName)\u{0}\(debugger)\u{0}\(trust)"
        if let existing = sharedExporters.withLock({ $0[key] }) { return existing }
        // Made outside the lock: making it makes a Logger, which may run the app's logging bootstrap, which may
        // ask for this very exporter.
        var configuration = TelemetryExporterConfiguration(appName: appName, debugger: debugger)
        configuration.trust = trust
        let candidate = TelemetryExporter(configuration: configuration)
        let (exporter, isNew) = sharedExporters.withLock { exporters in
            if let existing = exporters[key] { return (existing, false) }
            exporters[key] = candidate
            return (candidate, true)
        }
        if isNew {
            do {
                try exporter.start()
            } catch {
                exporter.logger.error("telemetry exporter not started", metadata: ["error": "\(error)"])
            }
        }
        return exporter
    }

    /// Stops every exporter ``shared(appName:debugger:trust:)`` made (each flushing for its flush timeout), for a
    /// program about to exit that wants its last records sent. Later uses make new ones.
    public static func stopShared() async {
        let exporters = sharedExporters.withLock { exporters in
            defer { exporters.removeAll() }
            return Array(exporters.values)
        }
        await withTaskGroup(of: Void.self) { group in
            for exporter in exporters { group.addTask { await exporter.stop() } }
        }
    }

    // MARK: - Recording

    /// Queues a log record. O(1); never waits and never fails: past the capacity the oldest waiting record is
    /// dropped, after `stop()` this one is (both counted). `redaction` is applied to its metadata before it leaves,
    /// by the exporter's task: matching every key against the secret words costs microseconds, which the caller
    /// does not wait for.
    public func enqueue(_ record: LogRecord, redacting redaction: SecretRedaction = .none) {
        enqueue(Queued(item: .log(record), redaction: redaction))
    }

    /// Queues a finished span, as ``enqueue(_:redacting:)`` does a log record; `redaction` applies to the
    /// attributes of the span, its events and its links.
    public func enqueue(_ span: SpanRecord, redacting redaction: SecretRedaction = .none) {
        enqueue(Queued(item: .span(span), redaction: redaction))
    }

    @inline(__always)
    private func enqueue(_ queued: Queued) {
        let wakeSender = state.withLock { state -> Bool in
            switch state.lifecycle {
            case .idle, .running:
                if state.queue.append(queued) { state.statistics.dropped += 1 }
                guard state.senderWantsRecords else { return false }
                state.senderWantsRecords = false
                return true
            case .stopping, .stopped:
                state.statistics.dropped += 1
                return false
            }
        }
        if wakeSender { wake.yield() }
    }

    /// Asks the sender to look at the queue now (what `ParleyTracer.forceFlush()` does). Returns at once.
    public func flushSoon() {
        wake.yield()
    }

    /// Counters of dropped, sent and failed records.
    public var statistics: TelemetryExporterStatistics { state.withLock { $0.statistics } }

    /// Records lost without being sent; see ``TelemetryExporterStatistics/dropped``.
    public var droppedCount: Int { state.withLock { $0.statistics.dropped } }

    /// Records waiting to be sent.
    public var pendingCount: Int { state.withLock { $0.queue.count } }

    /// Whether a peer that accepts telemetry is connected right now.
    public var isConnected: Bool { !telemetryPeers().isEmpty }

    /// What waits in the queue, oldest first, redacted as it will leave (for the package's tests).
    package var queuedItems: [TelemetryItem] { state.withLock { $0.queue.elements }.map(\.redacted) }

    // MARK: - Lifecycle

    /// Runs the exporter in a task it owns and returns at once; ``stop()`` ends that task. A failure of the
    /// connection to start (the peer id file, the discovery backend) is logged.
    /// - Throws: ``TelemetryExporterError`` if the configuration is invalid or the exporter has already started.
    public func start() throws(TelemetryExporterError) {
        try configuration.validate()
        if let deviceProblem { throw .deviceIdentity(deviceProblem) }
        try state.withLock { (state) throws(TelemetryExporterError) in
            guard case .idle = state.lifecycle, state.runTask == nil else { throw .alreadyStarted }
            // For callers with no task tree to put the exporter in (a logging bootstrap); stop() awaits it, so it
            // does not outlive the exporter's owner.
            state.runTask = Task { [logger] in
                do {
                    try await self.run()
                } catch {
                    logger.error("telemetry exporter stopped", metadata: ["error": "\(error)"])
                    throw error
                }
            }
        }
    }

    /// Stops: records still queued get ``TelemetryExporterConfiguration/flushTimeout`` to reach a debugger
    /// (connecting first if none is), then the exporter's own connection closes. Returns when everything has
    /// ended. Later records are counted as dropped. A shared transceiver is left running.
    public func stop() async {
        let task = state.withLock { state -> Task<Void, any Error>? in
            switch state.lifecycle {
            case .idle where state.runTask == nil:
                state.lifecycle = .stopped
                state.statistics.dropped += state.queue.removeAll()
            case .idle, .running:
                state.lifecycle = .stopping
            case .stopping, .stopped:
                break
            }
            return state.runTask
        }
        stopContinuation.finish()
        wake.yield()
        if let task {
            _ = try? await task.value
        } else {
            await waitUntilStopped()
        }
    }

    /// Runs the exporter until ``stop()`` (and the flush after it) or cancellation: keeps its own connection up
    /// (`.debugger`), and sends what is queued whenever a peer that accepts telemetry is connected.
    /// - Throws: ``TelemetryExporterError`` for an invalid configuration or a second run; the transceiver's error
    ///   if its own connection cannot start at all.
    public func run() async throws {
        try configuration.validate()
        if let deviceProblem { throw TelemetryExporterError.deviceIdentity(deviceProblem) }
        try state.withLock { (state) throws(TelemetryExporterError) in
            switch state.lifecycle {
            case .idle:
                state.lifecycle = .running
            // stop() came before the task start() made got here: it still flushes what is queued (a program that
            // logs a line and exits at once stops its exporter this early).
            case .stopping where state.runTask != nil:
                break
            default:
                throw .alreadyStarted
            }
        }
        defer { finish() }
        // Subscribed before the transceiver runs and before the sender first looks, so that no arrival is missed.
        let peerEvents = transceiver.peerEvents
        try await withThrowingTaskGroup(of: Child.self) { group in
            if ownsTransceiver {
                group.addTask {
                    try await self.transceiver.run()
                    return .transceiver
                }
            }
            group.addTask {
                for await event in peerEvents {
                    if case .connected(let peer) = event, self.ownsTransceiver, !Self.acceptsTelemetry(peer) {
                        self.logger.info("connected peer does not accept telemetry; nothing will be sent to it", metadata: ["peer": "\(peer)"])
                    }
                    self.wake.yield()
                }
                return .peerEvents
            }
            group.addTask {
                await self.sendUntilStopped()
                // Graceful: the batches just queued on the connection get the transceiver's flush time.
                if self.ownsTransceiver { await self.transceiver.stop() }
                return .sender
            }
            group.addTask {
                await self.cancelAfterFlushTimeout()
                return .watchdog
            }
            while let child = try await group.next() {
                // The sender is done (stopped and flushed, or cut short): nothing else has work left.
                if child == .sender || child == .watchdog { group.cancelAll() }
            }
        }
    }

    private enum Child: Sendable, Hashable {
        case transceiver, peerEvents, sender, watchdog
    }

    /// After `stop()`, the sender gets the flush timeout to empty the queue; then it is cancelled (a send waiting
    /// on a stalled connection included).
    private func cancelAfterFlushTimeout() async {
        for await _ in stopSignal {}
        guard !Task.isCancelled else { return }
        try? await Task.sleep(for: configuration.flushTimeout)
        guard !Task.isCancelled else { return }
        let pending = pendingCount
        if pending > 0 {
            logger.info("telemetry records still queued after the flush timeout are dropped", metadata: ["pending": "\(pending)"])
        }
    }

    private func finish() {
        let waiters = state.withLock { state in
            state.lifecycle = .stopped
            state.statistics.dropped += state.queue.removeAll()
            defer { state.stoppedWaiters.removeAll() }
            return state.stoppedWaiters
        }
        wake.finish()
        stopContinuation.finish()
        for waiter in waiters { waiter.resume() }
    }

    /// For an exporter driven by `run()`: returns once `run()` has finished.
    private func waitUntilStopped() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let pending = state.withLock { state -> Bool in
                if case .stopped = state.lifecycle { return false }
                state.stoppedWaiters.append(continuation)
                return true
            }
            if !pending { continuation.resume() }
        }
    }

    // MARK: - Sending

    private static func acceptsTelemetry(_ peer: Peer) -> Bool {
        peer.accepts.contains(TelemetryBatch.messageType)
    }

    private func telemetryPeers() -> [Peer] {
        transceiver.peers.filter(Self.acceptsTelemetry)
    }

    private enum NextStep {
        case send, wait, finish
    }

    /// Sends batches whenever there is a debugger to send them to; after `stop()`, until the queue is empty (the
    /// flush timeout cuts that short).
    private func sendUntilStopped() async {
        var wakeups = self.wakeups.makeAsyncIterator()
        var sender = BatchSender(exporter: self)
        while !Task.isCancelled {
            let peers = telemetryPeers()
            let step = state.withLock { state -> NextStep in
                if !state.queue.isEmpty && !peers.isEmpty { return .send }
                if case .stopping = state.lifecycle, state.queue.isEmpty { return .finish }
                // With a debugger connected, a record queued from now on wakes the sender; with none, records
                // only wait (a debugger connecting wakes it), so that logging while disconnected costs no wake-ups.
                state.senderWantsRecords = !peers.isEmpty
                return .wait
            }
            switch step {
            case .send:
                let items = state.withLock { $0.queue.popFirst(upTo: configuration.maximumBatchRecords) }
                await sender.send(items, to: peers)
            case .wait:
                guard await wakeups.next() != nil else { return }
            case .finish:
                return
            }
        }
    }

    /// Encodes and sends batches; remembers whether the last one failed, so that a debugger that stays
    /// unreachable is logged once, not once a batch.
    private struct BatchSender {
        let exporter: TelemetryExporter
        let encoder = JSONEncoder()
        var failing = false

        init(exporter: TelemetryExporter) {
            self.exporter = exporter
        }

        mutating func send(_ items: [Queued], to peers: [Peer]) async {
            var batch = TelemetryBatch()
            for queued in items {
                switch queued.redacted {
                case .log(let record): batch.logs.append(record)
                case .span(let span): batch.spans.append(span)
                }
            }
            _ = exporter.configuration.limits.apply(to: &batch)
            await send(batch, to: peers)
        }

        private mutating func send(_ batch: TelemetryBatch, to peers: [Peer]) async {
            let configuration = exporter.configuration
            let payload: ByteBuffer
            do {
                payload = ByteBuffer(bytes: try encoder.encode(batch))
            } catch {
                // Only a non-finite number in an attribute could do this, and those are written as text; kept
                // for whatever else JSONEncoder may refuse.
                exporter.logger.info("telemetry batch not encoded; its records are dropped", metadata: ["error": "\(error)"])
                exporter.state.withLock { $0.statistics.failed += batch.count }
                return
            }
            if payload.readableBytes > configuration.maximumBatchBytes, batch.count > 1 {
                let (first, second) = batch.halves
                await send(first, to: peers)
                await send(second, to: peers)
                return
            }
            guard payload.readableBytes <= configuration.limits.maximumBatchBytes else {
                exporter.logger.info(
                    "a telemetry record is larger than parleyd accepts even cut to the limits; dropped",
                    metadata: ["bytes": "\(payload.readableBytes)", "limit": "\(configuration.limits.maximumBatchBytes)"]
                )
                exporter.state.withLock { $0.statistics.failed += batch.count }
                return
            }
            var failures: [DeliveryFailure] = []
            for peer in peers {
                do {
                    try await exporter.transceiver.sendRaw(
                        typeName: TelemetryBatch.messageType, payload: payload, to: peer.id, stallTimeout: configuration.stallTimeout
                    )
                } catch {
                    failures.append(DeliveryFailure(debugger: peer.label, reason: "\(error)"))
                }
            }
            let delivered = failures.count < peers.count
            exporter.state.withLock { state in
                if delivered {
                    state.statistics.sent += batch.count
                    state.statistics.batches += 1
                } else {
                    state.statistics.failed += batch.count
                }
            }
            if !failures.isEmpty && !failing {
                exporter.logger.info(
                    "telemetry batch not delivered; further failures are counted, not logged, until one gets through",
                    metadata: ["records": "\(batch.count)", "failures": "\(failures.map(\.description).joined(separator: "; "))"]
                )
            }
            failing = !failures.isEmpty
        }
    }

    // MARK: - State

    fileprivate enum Lifecycle {
        case idle, running, stopping, stopped
    }

    fileprivate struct State {
        var lifecycle = Lifecycle.idle
        var queue: RecordQueue<Queued>
        var statistics = TelemetryExporterStatistics()
        /// The sender waits for records (a debugger is connected and the queue was empty): the next record wakes it.
        var senderWantsRecords = false
        var runTask: Task<Void, any Error>?
        var stoppedWaiters: [CheckedContinuation<Void, Never>] = []
    }
}

/// A record waiting in a ``TelemetryExporter``'s queue: log lines and spans share one queue, so that they leave
/// in the order they were given.
package enum TelemetryItem: Sendable, Hashable {
    case log(LogRecord)
    case span(SpanRecord)
}

/// A record and the redaction it gets on its way out.
struct Queued: Sendable {
    var item: TelemetryItem
    var redaction: SecretRedaction

    var redacted: TelemetryItem {
        guard !redaction.words.isEmpty else { return item }
        switch item {
        case .log(var record):
            if !record.metadata.isEmpty { record.metadata = redaction.apply(to: record.metadata) }
            return .log(record)
        case .span(var span):
            if !span.attributes.isEmpty { span.attributes = redaction.apply(to: span.attributes) }
            for index in span.events.indices where !span.events[index].attributes.isEmpty {
                span.events[index].attributes = redaction.apply(to: span.events[index].attributes)
            }
            for index in span.links.indices where !span.links[index].attributes.isEmpty {
                span.links[index].attributes = redaction.apply(to: span.links[index].attributes)
            }
            return .span(span)
        }
    }
}

extension TelemetryBatch {
    /// The batch's logs and spans in two batches of about half the records each.
    fileprivate var halves: (TelemetryBatch, TelemetryBatch) {
        let logSplit = logs.count / 2
        let spanSplit = spans.count / 2 + (logs.count % 2 == 1 && spans.count % 2 == 1 ? 1 : 0)
        return (
            TelemetryBatch(logs: Array(logs[..<logSplit]), spans: Array(spans[..<spanSplit])),
            TelemetryBatch(logs: Array(logs[logSplit...]), spans: Array(spans[spanSplit...]))
        )
    }
}
