import Logging
import NIOCore
import Parley
import ParleyDebugger

/// The typed protocol, on a ``Transceiver`` that does not listen and keeps its debuggers connected by itself: a
/// static peer for a known endpoint, discovery auto-connect otherwise (both reconnect with backoff).
final class ParleyDebuggerTransport: DebuggerTransport {
    let transceiver: Transceiver
    private let events: TransportEvents
    private let logger: Logger
    private let shutdownSignal: AsyncStream<Void>
    private let shutdownContinuation: AsyncStream<Void>.Continuation

    init(
        appName: String, location: DebuggerLocation, identity: TransceiverConfiguration.Identity?, sharedSecret: SharedSecret?,
        paired: PairedDebuggers? = nil, eventLoopGroup: any EventLoopGroup, logger: Logger, events: TransportEvents
    ) {
        let configuration = Self.transceiverConfiguration(
            appName: appName, location: location, identity: identity, sharedSecret: sharedSecret, paired: paired,
            eventLoopGroup: eventLoopGroup, logger: logger
        )
        self.transceiver = Transceiver(configuration: configuration)
        self.events = events
        self.logger = logger
        (shutdownSignal, shutdownContinuation) = AsyncStream.makeStream()
        // Registered before the transceiver starts, so that the hello lists the type and parleyd knows this app
        // can travel in time.
        transceiver.receiveRaw(typeName: StateRestore.messageType) { message, peer in
            await events.stateReceived(message.payload, peer.description)
        }
    }

    /// A transceiver that finds and keeps the debugger connected: dials out only, to a static peer for a known
    /// endpoint or to what discovery finds (both reconnect with backoff). The telemetry exporter's own connection
    /// is made the same way.
    static func transceiverConfiguration(
        appName: String, location: DebuggerLocation, identity: TransceiverConfiguration.Identity?, sharedSecret: SharedSecret?,
        paired: PairedDebuggers? = nil, eventLoopGroup: any EventLoopGroup, logger: Logger
    ) -> TransceiverConfiguration {
        var configuration = TransceiverConfiguration(
            name: appName,
            identity: identity,
            // An app only dials out; a listener would be one more open port on the device for nothing.
            listenHost: nil,
            // The restore handler may decode a multi-megabyte state; off the event loop it cannot hold up the
            // records being written on the same loop.
            handlersRunOnEventLoop: false,
            sharedSecret: sharedSecret,
            logger: logger,
            eventLoopGroup: eventLoopGroup
        )
        switch location {
        case .endpoint(let host, let port):
            configuration.staticPeers = [Endpoint(host: host, port: port)]
        case .discover(let backend, let serviceType):
            // Not advertised: the debugger does not need to find apps, apps find it. `.all` dials services whose
            // TXT record carries a Parley peer id, which parleyd's advertisement does.
            // With paired debuggers, only those (by the fingerprint they advertise), or while there is none the
            // one to pair with: a debugger that is not dialled learns nothing, not even the app's hello.
            let autoConnect: AutoConnectPolicy = paired.map { paired in .matching { paired.admits($0) } } ?? .all
            configuration.discovery = DiscoveryConfiguration(backend: backend, serviceType: serviceType, advertise: false, autoConnect: autoConnect)
        }
        configuration.devices = paired?.authentication
        return configuration
    }

    func run() async throws {
        // Subscribed before the transceiver runs, so that no connection event is missed.
        let peerEvents = transceiver.peerEvents
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await self.transceiver.run() }
            group.addTask {
                for await event in peerEvents {
                    if case .connected(let peer) = event,
                        !peer.accepts.contains(StateRecord.messageType)
                    {
                        self.logger.info(
                            "connected peer does not accept state records; nothing will be sent to it",
                            metadata: ["peer": "\(peer)"]
                        )
                    }
                    self.events.connectivityChanged()
                }
            }
            group.addTask {
                for await _ in self.shutdownSignal {}
                // Graceful: queued frames get the transceiver's flush time.
                await self.transceiver.stop()
            }
            // Whichever child ends first (a shutdown, the transceiver failing or stopping) ends the others. The
            // cancellation also covers a shutdown that came before `transceiver.run()` was under way, which
            // `stop()` alone would miss.
            try await group.next()
            group.cancelAll()
            try await group.waitForAll()
        }
    }

    func shutdown() {
        shutdownContinuation.finish()
    }

    var hasDebugger: Bool {
        transceiver.peers.contains(where: Self.isDebugger)
    }

    func send(_ record: ByteBuffer) async throws {
        let debuggers = transceiver.peers.filter(Self.isDebugger)
        var failures: [DeliveryFailure] = []
        for debugger in debuggers {
            do {
                try await transceiver.sendRaw(typeName: StateRecord.messageType, payload: record, to: debugger.id)
            } catch {
                failures.append(DeliveryFailure(debugger: debugger.description, reason: "\(error)"))
            }
        }
        if debuggers.isEmpty {
            throw RemoteDebuggerError.noDebuggerConnected
        }
        if failures.count == debuggers.count {
            throw RemoteDebuggerError.notDelivered(failures)
        }
        if !failures.isEmpty {
            logger.info("a record reached some debuggers only", metadata: ["failures": "\(failures.map(\.description).joined(separator: "; "))"])
        }
    }

    /// The transceiver keeps its debuggers connected whether or not there is anything to send: the hello tells the
    /// debugger at once who connected, so an idle connection is fine.
    func recordQueued() {}

    private static func isDebugger(_ peer: Peer) -> Bool {
        peer.accepts.contains(StateRecord.messageType)
    }
}
