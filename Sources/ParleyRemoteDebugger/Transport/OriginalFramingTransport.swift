import Logging
import NIOCore
import Parley
import ParleyDiscovery
import ParleyWire
import Synchronization

/// The original Swift Talk framing on a small NIO client of its own: one connection at a time (as the original
/// app had), to the configured endpoint or to the first discovered `_debug._tcp` service that answers; records
/// go out as 206 frames, 206 frames coming back are states to restore. Reconnects with backoff.
///
/// It dials only when a record is waiting, so that the first frame follows the connection at once: in this
/// framing the app speaks first, and until it does a debugger cannot tell it from any silent connection (Parley
/// closes those after its handshake timeout, 5 s). Once connected it stays connected and receives states.
final class OriginalFramingTransport: DebuggerTransport {
    private let location: DebuggerLocation
    private let maximumRecordSize: Int
    private let eventLoopGroup: any EventLoopGroup
    private let logger: Logger
    private let events: TransportEvents
    private let shutdownSignal: AsyncStream<Void>
    private let shutdownContinuation: AsyncStream<Void>.Continuation
    /// Signalled when a record is queued; holds at most one signal.
    private let demand: AsyncStream<Void>
    private let demandContinuation: AsyncStream<Void>.Continuation
    private let state = Mutex(State())

    private struct State {
        /// The connected channel. Records are written to it directly: the write's future completes once the bytes
        /// are with the kernel, so a record `send` reported sent survives the close that follows `stop()`.
        var channel: (any Channel)?
        var endpoint: Endpoint?
        /// Discovered services by instance name.
        var services: [String: DiscoveredService] = [:]
    }

    init(location: DebuggerLocation, maximumRecordSize: Int, eventLoopGroup: any EventLoopGroup, logger: Logger, events: TransportEvents) {
        self.location = location
        self.maximumRecordSize = maximumRecordSize
        self.eventLoopGroup = eventLoopGroup
        self.logger = logger
        self.events = events
        (shutdownSignal, shutdownContinuation) = AsyncStream.makeStream()
        (demand, demandContinuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    func run() async throws {
        // A group no connection can be made on fails here, as a transceiver's `run()` does, not at every dial.
        try TransportBootstraps.check(eventLoopGroup)
        var discovery: (any DiscoveryBackend)?
        if case .discover(let factory, let serviceType) = location {
            let type = try ServiceType(serviceType)
            let backend = factory.makeBackend(logger: logger)
            try backend.start()
            backend.browse(type)
            discovery = backend
        }
        let (servicesChanged, servicesContinuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        await withDiscardingTaskGroup { group in
            if let discovery {
                group.addTask {
                    await self.follow(discovery, onChange: servicesContinuation)
                    servicesContinuation.finish()
                }
            }
            group.addTask { await self.maintainConnection(servicesChanged: servicesChanged) }
            for await _ in shutdownSignal {}
            // Ends the discovery events and the open connection at once; the cancellation ends the waits.
            discovery?.stop()
            state.withLock { $0.channel }?.close(promise: nil)
            group.cancelAll()
        }
    }

    func shutdown() {
        shutdownContinuation.finish()
    }

    func recordQueued() {
        demandContinuation.yield()
    }

    var hasDebugger: Bool {
        state.withLock { $0.channel != nil }
    }

    func send(_ record: ByteBuffer) async throws {
        guard record.readableBytes <= maximumRecordSize else {
            throw RemoteDebuggerError.recordTooLarge(size: record.readableBytes, maximum: maximumRecordSize)
        }
        guard let (channel, endpoint) = state.withLock({ state in state.channel.map { ($0, state.endpoint) } }) else {
            throw RemoteDebuggerError.noDebuggerConnected
        }
        do {
            try await channel.writeAndFlush(record).get()
        } catch {
            throw RemoteDebuggerError.notDelivered([
                DeliveryFailure(debugger: endpoint.map(\.description) ?? "the debugger", reason: "writing failed: \(error)")
            ])
        }
    }

    // MARK: - Connecting

    /// Keeps services up to date from discovery events until discovery stops.
    private func follow(_ discovery: any DiscoveryBackend, onChange: AsyncStream<Void>.Continuation) async {
        for await event in discovery.events {
            switch event {
            case .found(let service), .updated(let service):
                state.withLock { $0.services[service.instanceName] = service }
                onChange.yield()
            case .removed(let name, _, _):
                state.withLock { _ = $0.services.removeValue(forKey: name) }
            case .daemonUnavailable(let reason):
                logger.info("cannot discover the debugger: the discovery daemon is unavailable", metadata: ["reason": "\(reason)"])
            default:
                break
            }
        }
    }

    /// Whenever records are waiting: connects, serves the connection until it ends, waits, and again, until
    /// cancelled.
    private func maintainConnection(servicesChanged: AsyncStream<Void>) async {
        var backoff = Backoff()
        var changes = servicesChanged.makeAsyncIterator()
        var demands = demand.makeAsyncIterator()
        while !Task.isCancelled {
            if !events.hasPendingRecords() {
                if await demands.next() == nil { return }
                continue
            }
            let endpoints = candidates()
            if endpoints.isEmpty {
                // Only with discovery: nothing seen yet. Wait for a service rather than poll.
                if await changes.next() == nil { return }
                continue
            }
            if let (channel, endpoint) = await dial(endpoints) {
                backoff.reset()
                await serve(channel, endpoint: endpoint)
            }
            try? await Task.sleep(for: backoff.delay())
        }
    }

    /// The endpoints to try, in order: the configured one, or every address of every discovered service (by
    /// instance name, addresses in the discovery backend's preference order).
    private func candidates() -> [Endpoint] {
        switch location {
        case .endpoint(let host, let port):
            return [Endpoint(host: host, port: port)]
        case .discover:
            let services = state.withLock { $0.services.values }.sorted { $0.instanceName < $1.instanceName }
            return services.flatMap { service in
                service.addresses.map { Endpoint(host: $0.connectHost, port: Int(service.port)) }
            }
        }
    }

    private func dial(_ endpoints: [Endpoint]) async -> (NIOAsyncChannel<ByteBuffer, Never>, Endpoint)? {
        var failures: [String] = []
        for endpoint in endpoints {
            do {
                return (try await connect(to: endpoint), endpoint)
            } catch {
                failures.append("\(endpoint): \(error)")
            }
        }
        logger.debug("debugger unreachable; retrying", metadata: ["attempts": "\(failures.joined(separator: "; "))"])
        return nil
    }

    private func connect(to endpoint: Endpoint) async throws -> NIOAsyncChannel<ByteBuffer, Never> {
        let maximum = maximumRecordSize
        return try await TransportBootstraps.connect(
            on: eventLoopGroup, to: endpoint, timeout: .seconds(5), allowsRemoteHalfClosure: false
        ) { channel in
            channel.eventLoop.makeCompletedFuture {
                let pipeline = channel.pipeline.syncOperations
                try pipeline.addHandler(ByteToMessageHandler(OriginalFrameDecoder(maximumBodySize: maximum)))
                try pipeline.addHandler(OriginalFrameEncoder())
                return try NIOAsyncChannel<ByteBuffer, Never>(wrappingChannelSynchronously: channel)
            }
        }
    }

    /// Publishes the connection for `send`, hands states coming back to the debugger client, and returns when the
    /// connection ends (closed by the debugger, a broken frame, or shutdown).
    private func serve(_ channel: NIOAsyncChannel<ByteBuffer, Never>, endpoint: Endpoint) async {
        logger.info("connected to the debugger (original framing)", metadata: ["endpoint": "\(endpoint)"])
        do {
            try await channel.executeThenClose { inbound in
                state.withLock {
                    $0.channel = channel.channel
                    $0.endpoint = endpoint
                }
                events.connectivityChanged()
                defer {
                    state.withLock { $0.channel = nil }
                    events.connectivityChanged()
                }
                for try await json in inbound {
                    await events.stateReceived(json, endpoint.description)
                }
            }
            logger.info("the debugger closed the connection; reconnecting", metadata: ["endpoint": "\(endpoint)"])
        } catch {
            logger.info(
                "connection to the debugger ended; reconnecting",
                metadata: ["endpoint": "\(endpoint)", "error": "\(error)"]
            )
        }
    }
}
