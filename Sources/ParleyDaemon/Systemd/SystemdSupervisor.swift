import Foundation
import Logging
import Parley
import ParleyControl
import ParleyWeb
import ServiceLifecycle
import UnixSignals

/// What parleyd tells systemd while the transceiver runs, as a service of its `ServiceGroup`: READY once it
/// listens (and discovery has settled), the peer count in STATUS, the watchdog, reloads on SIGHUP (by the
/// ``ConfigurationReloader``); STOPPING on graceful shutdown.
struct SystemdSupervisor: Service {
    let notifier: SystemdNotifier
    let logger: Logger
    /// Whether READY waits for discovery to settle (discovery is on).
    let waitsForDiscovery: Bool
    let transceiver: Transceiver
    let events: AsyncStream<PeerEvent>
    let router: ControlRouter
    let debugger: DebuggerService
    let drawer: DrawerService
    let web: WebServer?
    let otlp: OTLPReceiver?
    let hangups: UnixSignalsSequence
    let reloader: ConfigurationReloader
    /// Logs that parleyd is ready, with the web debugger's address and the OTLP receiver's endpoint (nil: off).
    let announceReady: @Sendable (_ webURL: String?, _ otlpEndpoint: String?) -> Void

    func run() async throws {
        try await transceiver.waitUntilListening()
        // A SIGTERM while we wait for avahi-daemon must not be held up for the whole wait.
        await cancelWhenGracefulShutdown { await waitForDiscoveryToSettle() }
        var webURL: String?
        if let web {
            // nil: it could not listen, and its error is ending the group.
            guard let port = await web.waitUntilListening() else { return }
            webURL = web.configuration.url(port: port, includingToken: false)
            router.webURL.withLock { $0 = web.configuration.url(port: port, includingToken: true) }
        }
        // nil: it could not listen (another program has the port), which it has said; parleyd goes on without it.
        var otlpEndpoint: String?
        if let otlp, let port = await otlp.waitUntilListening() {
            otlpEndpoint = otlp.configuration.endpoint(port: port)
            router.otlpEndpoint.withLock { $0 = otlpEndpoint }
            advertiseOTLP(host: otlp.configuration.host, port: port)
        }
        notifier.notify("READY=1\nSTATUS=\(Self.status(peerCount: 0))\nMAINPID=\(getpid())", logger: logger)
        announceReady(webURL, otlpEndpoint)
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await reportPeerCount() }
            if let interval = notifier.watchdogInterval {
                group.addTask { await pingWatchdog(every: interval) }
            }
            group.addTask { await reloader.reloadOnHangup(hangups, debugger: debugger) }
            // Until SIGTERM/SIGINT (graceful shutdown) or cancellation.
            do {
                try await gracefulShutdown()
            } catch {
                logger.notice("parleyd cancelled; stopping")
            }
            notifier.notify("STOPPING=1", logger: logger)
            logger.notice("parleyd stopping", metadata: ["peers": "\(transceiver.peers.count)"])
            group.cancelAll()
        }
    }

    /// Adds the receiver's port to the TXT record (only beyond loopback: ``OTLPAdvertisement``), so that
    /// `parleyctl otel-env` on another host finds it. Its port is known only now: it may have been 0.
    private func advertiseOTLP(host: String, port: Int) {
        guard let value = OTLPAdvertisement.txtValue(host: host, port: port) else { return }
        do {
            try transceiver.setAdvertisedTXT(value, forKey: OTLPAdvertisement.txtKey)
        } catch {
            logger.warning(
                "cannot advertise the OTLP receiver; exporters on other hosts must be given its endpoint by hand",
                metadata: ["otlp-listen": "\(Endpoint(host: host, port: port))", "reason": "\(error)"])
        }
    }

    /// systemd's `STATUS=`: `0 peers connected`, `1 peer connected`, `2 peers connected`.
    static func status(peerCount: Int) -> String { "\(peerCount) \(peerCount == 1 ? "peer" : "peers") connected" }

    /// READY means "advertised, or discovery reported off": with discovery on, wait (up to 10 s) until the discovery
    /// daemon has answered one way or the other, so that a unit ordered after parleyd finds it on the LAN.
    private func waitForDiscoveryToSettle() async {
        guard waitsForDiscovery else { return }
        let transceiver = self.transceiver
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

    private func reportPeerCount() async {
        var reported = 0
        for await event in events {
            switch event {
            case .connected(let peer):
                logger.debug("peer connected", metadata: ["peer-id": "\(peer.id)", "peer-name": "\(peer.name)"])
            case .disconnected(let peer, let reason):
                router.clientDisconnected(peer)
                drawer.peerDisconnected(peer)
                debugger.peerDisconnected(peer)
                logger.debug("peer disconnected", metadata: ["peer-id": "\(peer.id)", "peer-name": "\(peer.name)", "reason": "\(reason)"])
            }
            // Open web pages refetch the peers; parleyctl's own connections are not peers to them either.
            if !event.peer.isLocal { debugger.events.publish(.peersChanged) }
            // LAN peers only: parleyctl's own connections to the control socket are not peers to an operator.
            let count = transceiver.peers.count { !$0.isLocal }
            if count != reported {
                reported = count
                notifier.notify("STATUS=\(Self.status(peerCount: count))", logger: logger)
                logger.info("peer count changed", metadata: ["peers": "\(count)"])
            }
        }
    }

    private func pingWatchdog(every interval: Duration) async {
        logger.debug("systemd watchdog enabled", metadata: ["interval": "\(interval)"])
        while !Task.isCancelled {
            notifier.notify("WATCHDOG=1", logger: logger)
            try? await Task.sleep(for: interval)
        }
    }
}

extension SystemdNotifier {
    /// Sends `state`, logging (not throwing) a failure: systemd may have gone away, which must not stop parleyd.
    func notify(_ state: String, logger: Logger) {
        if case .failure(let error) = notify(state) {
            logger.warning("cannot notify systemd", metadata: ["state": "\(state)", "error": "\(error)"])
        }
    }
}
