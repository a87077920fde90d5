import Foundation
import Logging
import Parley
import ParleyControl
import ParleyHistory
import ParleyWeb
import ServiceLifecycle
import Synchronization
import UnixSignals

/// parleyd: opens the history, then runs its `ServiceGroup` — the transceiver, and a supervisor that tells systemd
/// how it is doing and reloads on SIGHUP — until SIGTERM or SIGINT shut it down gracefully (the advertisement is
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
        let transceiver = Transceiver(configuration: configuration.transceiverConfiguration(logger: logger))
        let events = transceiver.peerEvents  // subscribed before start, so no connection is missed
        let reloader = Reloader(configuration)
        let router = ControlRouter(transceiver: transceiver, configuration: configuration, logger: logger)
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
        let debugger = DebuggerService(
            transceiver: transceiver, store: store, filters: configuration.actionFilters,
            diffMaxBytes: configuration.diffMaxBytes, diffTimeLimit: configuration.diffTimeLimit, logger: logger
        )
        debugger.install()
        let drawer = DrawerService(transceiver: transceiver, dataDirectory: configuration.dataDirectory, events: debugger.events, logger: logger)
        drawer.install()
        router.install { try await self.reload(reloader, debugger: debugger) }
        let web = makeWebServer(transceiver: transceiver, store: store, debugger: debugger, drawer: drawer, router: router)

        // parleyd's service group: the transceiver and the supervisor. On SIGTERM or SIGINT the group shuts them down
        // in reverse order: first the supervisor (STOPPING=1), then the transceiver drains (replies being computed
        // go out, peers are told, queues flush); the history is closed after both.
        let supervisor = Supervisor(
            daemon: self, transceiver: transceiver, events: events, router: router, debugger: debugger, drawer: drawer, web: web,
            hangups: hangups, reloader: reloader
        )
        // The web server after the transceiver: it shuts down first (its pages' live streams end), while the
        // transceiver still answers what they asked.
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = [
            .init(service: transceiver, successTerminationBehavior: .gracefullyShutdownGroup)
        ]
        if let web { services.append(.init(service: web, successTerminationBehavior: .gracefullyShutdownGroup)) }
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
            await debugger.close()
            throw error
        }
        await debugger.close()
        withExtendedLifetime(lock) {}
        logger.notice("parleyd stopped")
    }

    /// Everything parleyd does while the transceiver runs: READY once it listens (and discovery has settled), the
    /// peer count in STATUS, the watchdog, reloads on SIGHUP; STOPPING on graceful shutdown.
    private struct Supervisor: Service {
        let daemon: DaemonService
        let transceiver: Transceiver
        let events: AsyncStream<PeerEvent>
        let router: ControlRouter
        let debugger: DebuggerService
        let drawer: DrawerService
        let web: WebServer?
        let hangups: UnixSignalsSequence
        let reloader: Reloader

        func run() async throws {
            try await transceiver.waitUntilListening()
            // A SIGTERM while we wait for avahi-daemon must not be held up for the whole wait.
            await cancelWhenGracefulShutdown { await daemon.waitForDiscoveryToSettle(transceiver) }
            var webURL: String?
            if let web {
                // nil: it could not listen, and its error is ending the group.
                guard let port = await web.waitUntilListening() else { return }
                webURL = web.configuration.url(port: port, includingToken: false)
                router.webURL.withLock { $0 = web.configuration.url(port: port, includingToken: true) }
            }
            daemon.send("READY=1\nSTATUS=\(DaemonService.status(peerCount: 0))\nMAINPID=\(getpid())")
            daemon.announceReady(transceiver, webURL: webURL)
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    await daemon.reportPeerCount(events, transceiver: transceiver, router: router, debugger: debugger, drawer: drawer)
                }
                if let interval = daemon.notifier.watchdogInterval {
                    group.addTask { await daemon.pingWatchdog(every: interval) }
                }
                group.addTask { await daemon.reloadOnHangup(hangups, reloader: reloader, debugger: debugger) }
                // Until SIGTERM/SIGINT (graceful shutdown) or cancellation.
                do {
                    try await gracefulShutdown()
                } catch {
                    daemon.logger.notice("parleyd cancelled; stopping")
                }
                daemon.send("STOPPING=1")
                daemon.logger.notice("parleyd stopping", metadata: ["peers": "\(transceiver.peers.count)"])
                group.cancelAll()
            }
        }
    }

    /// The web debugger, unless `webListen` is off.
    private func makeWebServer(
        transceiver: Transceiver, store: HistoryStore, debugger: DebuggerService, drawer: DrawerService, router: ControlRouter
    ) -> WebServer? {
        guard let listen = configuration.webListen else { return nil }
        let metrics = DaemonMetrics(transceiver: transceiver, store: store)
        let backend = DaemonWebBackend(
            debugger: debugger, drawer: drawer, router: router, metrics: metrics, authenticatesPeers: configuration.sharedSecret != nil
        )
        let names = [DaemonConfiguration.defaultName(), DaemonConfiguration.defaultName() + ".local", configuration.name, configuration.name + ".local"]
        return WebServer(
            configuration: WebConfiguration(host: listen.host, port: listen.port, token: configuration.webToken, extraHostNames: names),
            backend: backend, events: debugger.events, assets: WebAssets(directory: configuration.webAssetsDirectory),
            metricsFactory: metrics.factory, logger: logger
        )
    }

    /// The `parleyd ready` notice for people, then the readiness line on standard output for programs.
    private func announceReady(_ transceiver: Transceiver, webURL: String?) {
        let port = transceiver.listeningPort ?? configuration.port
        let discovery = "\(transceiver.discoveryStatus)"
        logAuthenticationMode(port: port)
        logger.notice(
            "parleyd ready",
            metadata: [
                "port": "\(port)",
                "peer-id": "\(transceiver.localPeerID?.description ?? "?")",
                "name": "\(configuration.name)",
                "discovery": "\(discovery)",
                "data-directory": "\(configuration.dataDirectory)",
                "control-socket": "\(configuration.controlSocket)",
                "web": "\(webURL ?? "off")",
            ]
        )
        ReadinessLine(
            pid: getpid(), port: port, peerID: transceiver.localPeerID?.description, name: configuration.name,
            controlSocket: configuration.controlSocket, web: webURL, dataDirectory: configuration.dataDirectory, discovery: discovery
        ).write()
    }

    /// systemd's `STATUS=`: `0 peers connected`, `1 peer connected`, `2 peers connected`.
    static func status(peerCount: Int) -> String { "\(peerCount) \(peerCount == 1 ? "peer" : "peers") connected" }

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

    /// READY means "advertised, or discovery reported off": with discovery on, wait (up to 10 s) until the discovery
    /// daemon has answered one way or the other, so that a unit ordered after parleyd finds it on the LAN.
    private func waitForDiscoveryToSettle(_ transceiver: Transceiver) async {
        guard configuration.discovery else { return }
        let settled = await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                _ = await transceiver.discoverySettled()
                return true
            }
            group.addTask {
                // A real wait by design: the bound on a discovery daemon that never answers.
                try? await Task.sleep(for: .seconds(10))
                return false
            }
            defer { group.cancelAll() }
            return await group.next() ?? false
        }
        // An unavailable avahi-daemon is logged by the transceiver itself; only a silent one is ours to report.
        if !settled {
            logger.warning("avahi-daemon has not answered within 10 s; reporting ready without an advertisement")
        }
    }

    fileprivate func reportPeerCount(
        _ events: AsyncStream<PeerEvent>, transceiver: Transceiver, router: ControlRouter, debugger: DebuggerService,
        drawer: DrawerService
    ) async {
        var reported = 0
        for await event in events {
            switch event {
            case .connected(let peer):
                logger.debug("peer connected", metadata: ["peer-id": "\(peer.id)", "peer-name": "\(peer.name)"])
            case .disconnected(let peer, let reason):
                router.clientDisconnected(peer)
                drawer.peerDisconnected(peer)
                await debugger.peerDisconnected(peer)
                logger.debug("peer disconnected", metadata: ["peer-id": "\(peer.id)", "peer-name": "\(peer.name)", "reason": "\(reason)"])
            }
            // Open web pages refetch the peers; parleyctl's own connections are not peers to them either.
            if !event.peer.isLocal { debugger.events.publish(.peersChanged) }
            // LAN peers only: parleyctl's own connections to the control socket are not peers to an operator.
            let count = transceiver.peers.count { !$0.isLocal }
            if count != reported {
                reported = count
                send("STATUS=\(Self.status(peerCount: count))")
                logger.info("peer count changed", metadata: ["peers": "\(count)"])
            }
        }
    }

    fileprivate func pingWatchdog(every interval: Duration) async {
        logger.debug("systemd watchdog enabled", metadata: ["interval": "\(interval)"])
        while !Task.isCancelled {
            send("WATCHDOG=1")
            try? await Task.sleep(for: interval)
        }
    }

    /// SIGHUP: see ``reload(_:)``. A configuration that does not load is logged and ignored.
    fileprivate func reloadOnHangup(_ hangups: UnixSignalsSequence, reloader: Reloader, debugger: DebuggerService) async {
        for await _ in hangups {
            _ = try? await reload(reloader, debugger: debugger)
        }
    }

    /// SIGHUP and `parleyctl reload` (`parley.control.Reload`): re-reads the configuration. The log level changes
    /// at once; any other changed key is named in the log as needing a restart (the transceiver's settings are
    /// fixed while it runs). A configuration that does not load is logged and thrown: the daemon keeps running as
    /// it was.
    func reload(_ reloader: Reloader, debugger: DebuggerService) async throws -> Control.ReloadResult {
        let (result, configuration) = try reload(reloader)
        let debuggerKeys: Set<ConfigurationKey> = [.historyMaxEntries, .historyMaxBytes, .actionFilters]
        if !debuggerKeys.isDisjoint(with: result.applied.compactMap(ConfigurationKey.init(rawValue:))) {
            do {
                try await debugger.apply(filters: configuration.actionFilters, limits: configuration.historyLimits)
                logger.notice("debugger history settings changed", metadata: ["history-limits": "\(configuration.historyLimits)"])
            } catch {
                logger.error("cannot apply the new history limits", metadata: ["reason": "\(error)"])
                throw error
            }
        }
        return result
    }

    /// The synchronous part of a reload, under the lock: returns what changed and the configuration now running.
    private func reload(_ reloader: Reloader) throws -> (Control.ReloadResult, DaemonConfiguration) {
        try reloader.current.withLock { current in
            send("RELOADING=1\nMONOTONIC_USEC=\(Self.monotonicMicroseconds())")
            defer { send("READY=1") }
            let next: DaemonConfiguration
            do {
                next = try reload()
            } catch {
                logger.error("reload failed; keeping the running configuration", metadata: ["reason": "\(error)"])
                throw error
            }
            let changed = next.changedKeys(from: current)
            if changed.isEmpty {
                logger.notice("configuration reloaded; nothing changed")
                return (Control.ReloadResult(applied: [], needRestart: []), current)
            }
            var applied: [String] = []
            if changed.contains(.logLevel) {
                logLevel.current = next.logLevel
                current.logLevel = next.logLevel
                applied.append(ConfigurationKey.logLevel.rawValue)
                logger.notice("log level changed", metadata: ["log-level": "\(next.logLevel)"])
            }
            for key in changed where [.historyMaxEntries, .historyMaxBytes, .actionFilters].contains(key) {
                applied.append(key.rawValue)
            }
            current.historyLimits = next.historyLimits
            current.actionFilters = next.actionFilters
            let pending = changed.filter(\.needsRestart)
            if !pending.isEmpty {
                logger.warning(
                    "configuration changed; restart parleyd to apply",
                    metadata: [
                        "keys": "\(pending.map(\.rawValue).joined(separator: ","))",
                        "new-values": "\(pending.map { "\($0)=\(next.valueDescription($0))" }.joined(separator: " "))",
                    ]
                )
            }
            return (Control.ReloadResult(applied: applied, needRestart: pending.map(\.rawValue)), current)
        }
    }

    fileprivate func send(_ state: String) {
        if case .failure(let error) = notifier.notify(state) {
            logger.warning("cannot notify systemd", metadata: ["state": "\(state)", "error": "\(error)"])
        }
    }

    private static func monotonicMicroseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1_000
    }
}

/// The configuration parleyd runs with, as reloads change it; one reload at a time (SIGHUP or a control request).
final class Reloader: Sendable {
    let current: Mutex<DaemonConfiguration>
    init(_ configuration: DaemonConfiguration) { current = Mutex(configuration) }
}
