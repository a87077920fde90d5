import Foundation
import Logging
import NIOCore
import NIOPosix
import ParleyDiscovery
import ParleySecurity
import ParleyWire
import Synchronization

extension Transceiver {
    /// Dials what discovery finds and the static peers, and redials them, until the transceiver drains; then
    /// stops every dialling loop (one may be waiting out a backoff).
    func keepDialling(discovery: DiscoveryCoordinator?, network: NetworkMonitor?) async {
        await withDiscardingTaskGroup { group in
            if let network {
                group.addTask { await self.closeConnectionsOnNetworkLoss(network) }
            }
            if let discovery {
                group.addTask {
                    await discovery.run(
                        dial: { service in await self.dial(service) },
                        waitForDeparture: { peer in await self.registry.waitUntilDisconnected(peer) }
                    )
                }
            }
            for endpoint in configuration.staticPeers {
                group.addTask { await self.keepConnected(to: endpoint) }
            }
            await registry.waitUntilClosed()
            group.cancelAll()
        }
    }

    /// Connects to a peer and completes the handshake. Returns the peer, also when the two sides connected to
    /// each other at once and the other connection was kept.
    @discardableResult
    public func connect(to endpoint: Endpoint) async throws -> Peer {
        try await connect(to: endpoint, expecting: nil)
    }

    /// Connects to `endpoint`, where discovery says peer `expected` listens (see ``PeerConnection/expectedPeer``).
    func connect(to endpoint: Endpoint, expecting expected: PeerID?) async throws -> Peer {
        guard isRunning else { throw TransceiverError.notRunning }
        let configuration = self.configuration
        let setup = self.setup
        let channel: ConnectionChannel
        do {
            channel = try await TransportBootstraps.connect(
                on: group, to: endpoint, timeout: TimeAmount(configuration.handshakeTimeout), allowsRemoteHalfClosure: true
            ) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try setup.configure(channel, role: .dialer, authentication: setup.tcpAuthentication(for: .dialer))
                }
            }
        } catch {
            throw TransceiverError.connectFailed(endpoint, underlying: SocketFailure(error))
        }
        channel.connection.expectedPeer = expected
        return try await handOver(channel, endpoint: endpoint)
    }

    /// Connects to a node's control socket (a local parleyd) and completes the handshake.
    @discardableResult
    public func connect(toUnixSocket path: String) async throws -> Peer {
        guard isRunning else { throw TransceiverError.notRunning }
        let setup = self.setup
        let endpoint = Endpoint(host: "unix:" + path, port: 0)
        let channel: ConnectionChannel
        do {
            // A Unix socket's send buffer does not grow as TCP's does: at the default 208 KiB a 4 MiB message
            // crossed to parleyd in some twenty steps, each waiting for parleyd to be scheduled to read. Linux caps
            // the request at net.core.wmem_max and then doubles it (so 416 KiB on a stock kernel, 4 MiB where
            // wmem_max is 4 MiB, as where it was measured: 4 MiB through parleyd 0.75 – 0.89 -> 0.84 – 0.98 GB/s,
            // docs/performance.md). A limit, not an allocation: only bytes parleyd has not read use it.
            channel = try await TransportBootstraps.connect(on: group, unixDomainSocketPath: path, sendBufferSize: 2 << 20) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try setup.configure(channel, role: .dialer, authentication: .none)
                }
            }
        } catch {
            throw TransceiverError.connectFailed(endpoint, underlying: SocketFailure(error))
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
            let jobs = lifecycle.withLock { state -> AsyncStream<Job>.Continuation? in
                if case .running(let running) = state.machine.state { return running.jobs }
                return nil
            }
            let job = Job(channel: channel, endpoint: endpoint, handshake: handshake, handshakeDone: continuation)
            if jobs == nil || jobs.map({ if case .terminated = $0.yield(job) { true } else { false } }) == true {
                channel.channel.close(promise: nil)
                continuation.resume(throwing: TransceiverError.notRunning)
            }
        }
    }

    /// Keeps a configured static peer connected for as long as the transceiver runs: dials, waits (without
    /// polling) until the peer is gone, dials again; a failed dial waits a jittered backoff.
    func keepConnected(to endpoint: Endpoint) async {
        var backoff = Backoff()
        while isRunning, !Task.isCancelled {
            do {
                let peer = try await connect(to: endpoint).id
                let connected = ContinuousClock.now
                await registry.waitUntilDisconnected(peer)
                if let delay = backoff.afterConnection(lasted: .now - connected) {
                    // A real wait by design, as below.
                    try? await Task.sleep(for: delay)
                }
            } catch {
                guard isRunning else { return }
                logger.info("static peer unreachable; retrying", metadata: ["endpoint": "\(endpoint)", "error": "\(error)"])
                // A real wait by design: the backoff between attempts.
                try? await Task.sleep(for: backoff.delay())
            }
        }
    }
}
