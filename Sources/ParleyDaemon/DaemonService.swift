import Foundation
import Logging
import Parley
import ParleyControl
import ParleyHistory
import ParleyWeb
import ServiceLifecycle
import Synchronization
import UnixSignals

/// parleyd: opens the history, then runs its `ServiceGroup` — the transceiver, the web server, and a
/// ``SystemdSupervisor`` that tells systemd how it is doing and has the ``ConfigurationReloader`` reload on SIGHUP —
/// until SIGTERM or SIGINT shut it down gracefully (the advertisement is
/// withdrawn, in-flight replies go out, peers are told, queues flush with a bound).
public struct DaemonService: Sendable {
    public let configuration: DaemonConfiguration
    public let logger: Logger
    public let logLevel: LogLevelControl
    public let notifier: SystemdNotifier
    /// Re-reads the configuration (SIGHUP).
    public let reload: @Sendable () throws(ConfigurationError) -> DaemonConfiguration

    public init(
        configuration: DaemonConfiguration,
        logger: Logger,
        logLevel: LogLevelControl,
        notifier: SystemdNotifier,
        reload: @escaping @Sendable () throws(ConfigurationError) -> DaemonConfiguration
    ) {
        self.configuration = configuration
        self.logger = logger
        self.logLevel = logLevel
        self.notifier = notifier
        self.reload = reload
    }

    /// Runs parleyd until SIGTERM or SIGINT (graceful shutdown) or cancellation.
    public func run() async throws {
        // Trap SIGHUP first: its default action would end the process.
        let hangups = await UnixSignalsSequence(trapping: .sighup)
        // Before any socket is opened: systemd's default soft limit (1 024) is far below the hard one.
        let descriptors = DescriptorBudget.raised()
        let lock: DataDirectoryLock
        do {
            // Owner-only: the history holds the apps' states and screenshots.
            try FileManager.default.createDirectory(
                atPath: configuration.dataDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700]
            )
            // Before anything else touches the directory or the control socket: a second parleyd stops here.
            lock = try DataDirectoryLock(directory: configuration.dataDirectory)
        } catch let held as DataDirectoryLock.Held {
            throw held  // Parleyd.main says who holds it and what to do
        } catch {
            logger.critical(
                "cannot use the data directory; parleyd cannot start",
                metadata: ["reason": "\(error)", "data-directory": "\(configuration.dataDirectory)"]
            )
            throw error
        }
        // The device's identity (its key and certificate) and the devices paired with it, both in the data directory.
        let devices: DeviceBook
        do {
            let identity = try DeviceIdentity.loadOrCreate(in: configuration.dataDirectory, name: configuration.name)
            devices = try DeviceBook(directory: configuration.dataDirectory, identity: identity, logger: logger)
        } catch {
            logger.critical(
                "cannot use this device's identity or its paired devices; parleyd cannot start",
                metadata: ["reason": "\(error)", "data-directory": "\(configuration.dataDirectory)"]
            )
            throw error
        }
        var transceiverConfiguration = configuration.transceiverConfiguration(logger: logger)
        transceiverConfiguration.devices = devices.authentication
        let transceiver = Transceiver(configuration: transceiverConfiguration)
        let events = transceiver.peerEvents  // subscribed before start, so no connection is missed
        let reloader = ConfigurationReloader(
            configuration: configuration, read: reload, logLevel: logLevel, notifier: notifier, logger: logger
        )
        let router = ControlRouter(transceiver: transceiver, configuration: configuration, logger: logger)
        let store: HistoryStore
        do {
            store = try await HistoryStore.open(
                directory: configuration.dataDirectory, limits: configuration.historyLimits, logger: logger
            )
        } catch {
            logger.critical(
                "cannot open the debugger history; parleyd cannot start",
                metadata: ["reason": "\(error)", "data-directory": "\(configuration.dataDirectory)"]
            )
            throw error
        }
        let forwarder = configuration.otlpForward.map { url in
            OTLPForwarder(url: url, headers: configuration.otlpForwardHeaders, logger: logger)
        }
        let debugger = DebuggerService(
            transceiver: transceiver, store: store, filters: configuration.actionFilters,
            diffMaxBytes: configuration.diffMaxBytes, diffTimeLimit: configuration.diffTimeLimit, forwarder: forwarder, logger: logger
        )
        debugger.install()
        let drawer = DrawerService(transceiver: transceiver, dataDirectory: configuration.dataDirectory, events: debugger.events, logger: logger)
        await drawer.loadRemembered()
        drawer.install()
        router.install { try await reloader.reload(debugger: debugger) }
        let deviceService = DeviceService(book: devices, transceiver: transceiver)
        deviceService.install()
        // A request waiting, or a decision: the web debugger's Peers page shows it at once.
        devices.onChange { debugger.events.publish(.peersChanged) }
        let web = makeWebServer(
            transceiver: transceiver, store: store, debugger: debugger, drawer: drawer, router: router, devices: deviceService,
            descriptors: descriptors
        )
        let otlpSink = OTLPHistorySink(store: store, debugger: debugger, logger: logger)
        let otlp = configuration.otlpListen.map { listen in
            OTLPReceiver(
                configuration: OTLPConfiguration(
                    host: listen.host, port: listen.port, token: configuration.webToken,
                    extraHostNames: DaemonConfiguration.hostNames(name: configuration.name)),
                sink: otlpSink, logger: logger,
                warn: { [logThrottle = transceiver.logThrottle] message, metadata in logThrottle.warning(message, metadata: metadata, to: logger) },
                // After the web debugger: if it cannot listen, parleyd stops, and a receiver already running would
                // only add its own shutdown's lines to the one that matters.
                startsAfter: {
                    try await transceiver.waitUntilListening()
                    if let web, await web.waitUntilListening() == nil { throw CancellationError() }
                })
        }

        // parleyd's service group: the transceiver and the supervisor. On SIGTERM or SIGINT the group shuts them down
        // in reverse order: first the supervisor (STOPPING=1), then the transceiver drains (replies being computed
        // go out, peers are told, queues flush); the history is closed after both.
        let supervisor = SystemdSupervisor(
            notifier: notifier, logger: logger, waitsForDiscovery: configuration.discovery, transceiver: transceiver,
            events: events, router: router, debugger: debugger, drawer: drawer, web: web, otlp: otlp, hangups: hangups,
            reloader: reloader, announceReady: { webURL, otlpEndpoint in self.announceReady(transceiver, webURL: webURL, otlpEndpoint: otlpEndpoint) }
        )
        // The web server after the transceiver: it shuts down first (its pages' live streams end), while the
        // transceiver still answers what they asked.
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = []
        // First, so that it stops last: what the others store while they stop is still handed on.
        if let forwarder { services.append(.init(service: forwarder, successTerminationBehavior: .gracefullyShutdownGroup)) }
        // Stops after the transceiver and before the forwarder: the batches connections sent are stored (their
        // handlers return before that) and handed on while the forwarder still sends.
        services.append(
            .init(service: ShutdownStep { await debugger.telemetryLanes.drainAll() }, successTerminationBehavior: .gracefullyShutdownGroup))
        services.append(.init(service: transceiver, successTerminationBehavior: .gracefullyShutdownGroup))
        if let web { services.append(.init(service: web, successTerminationBehavior: .gracefullyShutdownGroup)) }
        // A receiver that could not listen returns, having said why; parleyd goes on without it.
        if let otlp { services.append(.init(service: otlp, successTerminationBehavior: .ignore)) }
        services.append(.init(service: supervisor, successTerminationBehavior: .gracefullyShutdownGroup))
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: services,
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger
            )
        )
        do {
            try await group.run()
        } catch {
            await otlpSink.endAll()
            await debugger.close()
            throw error
        }
        await otlpSink.endAll()
        await debugger.close()
        // When each paired device was last seen.
        do {
            try devices.save()
        } catch {
            logger.warning("cannot save the paired devices", metadata: ["reason": "\(error)"])
        }
        withExtendedLifetime(lock) {}
        logger.notice("parleyd stopped")
    }

    /// The web debugger, unless `webListen` is off.
    private func makeWebServer(
        transceiver: Transceiver, store: HistoryStore, debugger: DebuggerService, drawer: DrawerService, router: ControlRouter,
        devices: DeviceService, descriptors budget: DescriptorBudget
    ) -> WebServer? {
        guard let listen = configuration.webListen else { return nil }
        var web = WebConfiguration(
            host: listen.host, port: listen.port, token: configuration.webToken, extraHostNames: DaemonConfiguration.hostNames(name: configuration.name))
        web.signInURLHint = WebConfiguration.parleydSignInURLHint
        let share = budget.webConnections(
            wanted: web.maxConnections, parleyConnections: configuration.maxConnections, pendingConnections: configuration.maxPendingConnections
        )
        if share < web.maxConnections {
            logger.notice(
                "few file descriptors: the web debugger takes fewer connections",
                metadata: ["open-files-limit": "\(budget.limit)", "web-connections": "\(share)", "fix": "raise LimitNOFILE (the unit sets 65536)"]
            )
        }
        web.maxConnections = share
        let metrics = DaemonMetrics(transceiver: transceiver, store: store, telemetry: debugger.telemetryCounts, forwarder: debugger.forwarder)
        let backend = DaemonWebBackend(
            debugger: debugger, drawer: drawer, router: router, metrics: metrics, devices: devices,
            authenticatesPeers: configuration.sharedSecret != nil
        )
        return WebServer(
            configuration: web,
            backend: backend, assets: WebAssets(directory: configuration.webAssetsDirectory),
            metricsFactory: metrics.factory, logger: logger,
            startsAfter: { try await transceiver.waitUntilListening() }
        )
    }

    /// The `parleyd ready` notice for people, then the readiness line on standard output for programs.
    private func announceReady(_ transceiver: Transceiver, webURL: String?, otlpEndpoint: String?) {
        // Start-up is over: its code goes before the readiness line, after which a supervisor may measure parleyd.
        let released = StartupCode.release()
        let kibibytes = { (bytes: Int?) in bytes.map { "\($0 / 1024) KiB" } ?? "?" }
        logger.debug(
            "start-up code released",
            metadata: [
                "regions": "\(released.regions)", "resident-file-before": "\(kibibytes(released.residentFileBefore))",
                "resident-file-after": "\(kibibytes(released.residentFileAfter))",
            ]
        )
        let port = transceiver.listeningPort ?? configuration.port
        let discovery = "\(transceiver.discoveryStatus)"
        logAuthenticationMode(port: port)
        logger.notice(
            "parleyd ready",
            metadata: [
                "port": "\(port)",
                "peer-id": "\(transceiver.localPeerID?.description ?? "?")",
                "device": "\(transceiver.configuration.devices?.identity.fingerprint.short ?? "?")",
                "name": "\(configuration.name)",
                "discovery": "\(discovery)",
                "data-directory": "\(configuration.dataDirectory)",
                "control-socket": "\(configuration.controlSocket)",
                "web": "\(webURL ?? "off")",
                "otlp": "\(otlpEndpoint ?? "off")",
            ]
        )
        ReadinessLine(
            pid: getpid(), port: port, peerID: transceiver.localPeerID?.description, name: configuration.name,
            controlSocket: configuration.controlSocket, web: webURL, otlp: otlpEndpoint, dataDirectory: configuration.dataDirectory, discovery: discovery
        ).write()
    }

    /// Says at start-up, where an operator looks, whether anyone on the LAN may talk to this node.
    private func logAuthenticationMode(port: Int) {
        guard let secretFile = configuration.secretFile else {
            logger.notice(
                "parleyd runs OPEN: no secretFile is configured, so anyone on the LAN who can reach this port can connect, send messages to this node and its local clients, and receive what it broadcasts; configure secretFile (docs/security.md)",
                metadata: ["port": "\(port)"]
            )
            return
        }
        logger.notice(
            "LAN peers must prove the shared secret; their connections are encrypted",
            metadata: [
                "secret-file": "\(secretFile)",
                "original-framing-apps": "\(configuration.allowOriginalFramingWithoutSecret ? "accepted unauthenticated" : "refused")",
            ]
        )
    }
}

/// Work done when parleyd stops, at its place in the service group's order (services stop in reverse order).
private struct ShutdownStep: Service {
    let work: @Sendable () async -> Void

    func run() async throws {
        // Cancelled instead of shut down gracefully: the work is still done, and is short.
        try? await gracefulShutdown()
        await work()
    }
}
