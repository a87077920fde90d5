import Foundation
import Logging
import NIOCore
import NIOPosix
import ParleyDiscovery
import ParleySecurity
import ParleyWire
import Synchronization

extension Transceiver {
    /// Serves one connection from handshake to close. Errors end this connection only.
    func serve(_ job: Job) async {
        let channel = job.channel.channel
        let connection = job.channel.connection
        var logger = self.logger
        logger[metadataKey: "remote"] = "\(connection.remoteAddress)"
        guard registry.open(connection) else {
            channel.close(promise: nil)
            job.handshakeDone?.resume(throwing: TransceiverError.notRunning)
            return
        }

        var handshakeResult = job.handshakeDone
        var endReason = DisconnectReason.peerClosed
        do {
            try await job.channel.readThenClose { frames in
                let peer: Peer
                do {
                    peer = try await handshake(connection, machine: job.handshake, frames: &frames, logger: logger)
                } catch {
                    // Leaving this closure closes the channel at once; let a refusal reach the peer first.
                    connection.outbound.finish(sending: nil, then: .close, timeout: .seconds(1), reason: error)
                    try? await channel.closeFuture.get()
                    throw error
                }
                logger[metadataKey: "peer-id"] = "\(peer.id)"
                logger[metadataKey: "peer-name"] = "\(peer.name)"
                handshakeResult?.resume(returning: peer)
                handshakeResult = nil
                endReason = await exchange(over: connection, peer: peer, frames: &frames, logger: logger)
            }
        } catch let error as HandshakeError {
            counters.protocolErrors.add(1, ordering: .relaxed)
            counters.handshakeFailures.add(1, ordering: .relaxed)
            logThrottle.warning("handshake failed; connection closed", metadata: ["reason": "\(error)"], to: logger)
            handshakeResult?.resume(throwing: TransceiverError.handshakeFailed(job.endpoint, error))
            handshakeResult = nil
            endReason = .handshakeFailed(error)
        } catch {
            endReason = reason(for: error)
            logger.debug("connection ended", metadata: ["reason": "\(endReason)"])
        }
        handshakeResult?.resume(
            throwing: TransceiverError.connectFailed(job.endpoint ?? Endpoint(host: "?", port: 0), underlying: .closed)
        )

        connection.noteEnd(endReason)
        connectionEnded(connection)
        if let peer = connection.peer {
            // A local tool (parleyctl) connects for every command: its comings and goings are not news.
            logger.log(
                level: peer.isLocal ? .debug : .info, "peer connection closed",
                metadata: ["reason": "\(connection.endReason ?? endReason)"]
            )
        }
    }

    /// Everything that follows the end of a connection: pending requests fail, sends fail, the peer is reported
    /// gone (if this was its active connection). Runs as soon as the channel closes — even while one of its
    /// handlers is still busy — and again when its task ends; only the first call does anything.
    func connectionEnded(_ connection: PeerConnection) {
        let reason = connection.endReason ?? .peerClosed
        let error = TransceiverError.connectionClosed(connection.peer?.id ?? PeerID(), reason: reason)
        connection.outbound.close(error)
        // A retired duplicate leaves its requests waiting: their replies come on the connection that was kept.
        switch registry.remove(connection, peer: connection.peer?.id, reason: reason, handedOver: connection.isHandedOver) {
        case .gone(let gone):
            requests.failAll(to: gone.id, with: error)
        case .handover(let peer):
            // The kept connection is still in its handshake here; if it has not registered by the time a
            // handshake may take, the peer is gone after all.
            connection.channel.eventLoop.scheduleTask(in: TimeAmount(configuration.handshakeTimeout)) {
                if let gone = self.registry.expireHandover(of: peer.id, reason: reason) {
                    self.requests.failAll(to: gone.id, with: error)
                }
            }
        case nil:
            break
        }
    }


    func reason(for error: any Error) -> DisconnectReason {
        if let error = error as? ChannelError, error == .eof { return .peerClosed }
        if let error = error as? HeartbeatTimeout { return .silent(.nanoseconds(error.silence.nanoseconds)) }
        if let error = error as? IOError { return .transportFailed(.io(errno: error.errnoCode, message: error.description)) }
        return .transportFailed(.other(String(describing: error)))
    }
}
