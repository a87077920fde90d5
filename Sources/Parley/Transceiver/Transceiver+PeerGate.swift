import Dispatch
import Foundation
import Synchronization

extension Transceiver {
    /// The peer gate: waits until a connected peer matching `predicate` exists and returns it, or throws
    /// ``TransceiverError/noPeer(waitedFor:timeout:)`` after `timeout`. Returns at once if one is already connected.
    /// The predicate runs while the transceiver's state is locked: it must look only at the `Peer` it is given,
    /// never call back into the transceiver.
    public func waitForPeer(
        timeout: Duration,
        description: String = "peer",
        matching predicate: @escaping @Sendable (Peer) -> Bool = { _ in true }
    ) async throws -> Peer {
        guard isRunning else { throw TransceiverError.notRunning }
        do {
            return try await withTimeout(timeout) { try await self.registry.waitForPeer(matching: predicate) }
        } catch is TimeoutExpired {
            throw TransceiverError.noPeer(waitedFor: description, timeout: timeout)
        } catch PeerRegistry<PeerConnection>.GateError.closed {
            throw TransceiverError.notRunning
        }
    }

    /// The peer gate for synchronous command-line code: blocks the calling thread (never call it from an
    /// async context or an event loop) on a semaphore until ``waitForPeer(timeout:description:matching:)`` answers.
    /// Async code awaits ``waitForPeer(timeout:description:matching:)`` instead; the compiler says so.
    @available(*, noasync, message: "await waitForPeer(timeout:description:matching:) instead")
    public func waitForPeerBlocking(
        timeout: Duration,
        description: String = "peer",
        matching predicate: @escaping @Sendable (Peer) -> Bool = { _ in true }
    ) throws -> Peer {
        let semaphore = DispatchSemaphore(value: 0)
        let outcome = ResultBox()
        Task {
            do {
                outcome.set(.success(try await self.waitForPeer(timeout: timeout, description: description, matching: predicate)))
            } catch {
                outcome.set(.failure(error))
            }
            semaphore.signal()
        }
        semaphore.wait()
        return try outcome.get()
    }
}

/// Carries the gate's result from the task that awaits it to the thread blocked on the semaphore.
private final class ResultBox: Sendable {
    private let value = Mutex<Result<Peer, any Error>?>(nil)
    func set(_ result: Result<Peer, any Error>) { value.withLock { $0 = result } }
    func get() throws -> Peer { try value.withLock { $0 }!.get() }
}
