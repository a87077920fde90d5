import Foundation
import Logging
import NIOCore
import NIOPosix
import ParleyDiscovery
import ParleySecurity
import ParleyWire
import Synchronization

extension Transceiver {
    /// A listener yields each accepted connection, or nil for one refused by ``ConnectionAdmission``.
    typealias Listener = NIOAsyncChannel<ConnectionChannel?, Never>

    func bindListener(network: NetworkMonitor?) async throws -> Listener? {
        guard let host = configuration.listenHost else { return nil }
        let configuration = self.configuration
        let setup = self.setup
        let admission = self.admission
        let interfaceGate = configuration.listenInterfaces.flatMap { filter in
            network.map { ListenInterfaceGate(filter: filter, network: $0, logger: logger) }
        }
        do {
            let address = try await SocketAddress.resolving(host, port: configuration.port)
            return try await TransportBootstraps.listen(on: group, at: address) { channel in
                channel.eventLoop.makeCompletedFuture { () throws -> ConnectionChannel? in
                    if let interfaceGate, !interfaceGate.admits(channel) {
                        channel.close(promise: nil)
                        return nil
                    }
                    guard let admitted = try admission.admit(channel) else { return nil }
                    return try setup.configure(
                        channel, role: .acceptor, authentication: setup.tcpAuthentication(for: .acceptor), sniffsFraming: true,
                        handshakeClockStartsAtAccept: admitted.handshakeClockStartsAtAccept
                    )
                }
            }
        } catch {
            throw TransceiverError.bindFailed(host: host, port: configuration.port, underlying: SocketFailure(error))
        }
    }

    /// The control socket: the same protocol on a Unix domain socket, for local tools. Mode 0660, so that only
    /// the owner and its group can drive this node; in a directory ``ControlSocketGuard`` has checked.
    func bindControlSocket() async throws -> Listener? {
        guard let path = configuration.controlSocketPath else { return nil }
        let setup = self.setup
        let admission = self.admission
        do {
            do {
                try ControlSocketGuard.prepare(socketPath: path)
            } catch {
                throw TransceiverError.controlSocket(error)
            }
            let server = try await TransportBootstraps.listen(on: group, unixDomainSocketPath: path) { channel in
                channel.eventLoop.makeCompletedFuture { () throws -> ConnectionChannel? in
                    guard try admission.admit(channel) != nil else { return nil }
                    // Local clients: the socket's mode and owner protect it; they are not asked for the secret.
                    return try setup.configure(channel, role: .acceptor, authentication: .none)
                }
            }
            guard chmod(path, 0o660) == 0 else {
                let failure = SocketFailure(errno: errno)
                try? await server.channel.close()
                throw TransceiverError.bindFailed(host: path, port: 0, underlying: failure)
            }
            return server
        } catch let error as TransceiverError {
            throw error
        } catch {
            throw TransceiverError.bindFailed(host: path, port: 0, underlying: SocketFailure(error))
        }
    }

    func acceptLoop(_ server: Listener, jobs: AsyncStream<Job>.Continuation) async {
        do {
            try await server.executeThenClose { inbound in
                for try await child in inbound {
                    guard let child else { continue }
                    if case .terminated = jobs.yield(Job(channel: child)) {
                        try? await child.channel.close()
                    }
                }
            }
        } catch is CancellationError {
            // The transceiver is stopping: not a failure.
        } catch {
            logger.error("listener failed; no new connections will be accepted", metadata: ["error": "\(error)"])
        }
    }
}
