import NIOCore
import ParleyWire
import Synchronization

/// The single way frames leave a connection. It batches and bounds what is written:
/// - frames enqueued between two event-loop turns go out with one flush (one vectored write), so small
///   messages do not each cost a system call;
/// - bytes not yet handed to the kernel are counted, and `enqueue` waits while they are above the high
///   watermark until they drain below the low one, so a peer that stops reading cannot make memory grow.
final class OutboundQueue: Sendable {
    private struct Waiter {
        var id: UInt64
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var pending: [Frame] = []
        var pendingBytes = 0
        var flushScheduled = false
        /// Bytes enqueued and not yet written to the socket (pending plus handed to NIO).
        var queuedBytes = 0
        var waiters: [Waiter] = []
        var nextWaiterID: UInt64 = 0
        var closedError: (any Error)?
        var ending: Ending?
    }

    /// What happens to the channel once a finished queue has written everything.
    enum Ending: Sendable {
        /// Shut down our sending side and keep reading until the peer closes (nothing in flight is lost).
        case halfClose
        /// Close the channel.
        case close
    }

    private let channel: any Channel
    private let highWatermark: Int
    private let lowWatermark: Int
    private let state = Mutex(State())

    init(channel: any Channel, highWatermark: Int, lowWatermark: Int) {
        self.channel = channel
        // At least one byte each, low not above high: otherwise waiting senders could never be woken.
        self.highWatermark = max(1, highWatermark)
        self.lowWatermark = max(1, min(lowWatermark, self.highWatermark))
    }

    var queuedBytes: Int { state.withLock { $0.queuedBytes } }

    /// Queues `frame`, waiting first while the queue is above its high watermark. Throws once the queue is closed.
    func enqueue(_ frame: Frame) async throws {
        while true {
            if try enqueueIfRoom(frame) { return }
            try await waitForRoom()
        }
    }

    /// Queues `frame` if that needs no waiting; returns false (and queues nothing) when the queue is full.
    func enqueueIfRoom(_ frame: Frame) throws -> Bool {
        try state.withLock { state in
            if let error = state.closedError { throw error }
            guard state.queuedBytes < highWatermark, state.waiters.isEmpty else { return false }
            append(frame, to: &state)
            return true
        }
    }

    /// Fails every waiting and future `enqueue` with `error`. Frames already queued are still written.
    func close(_ error: any Error) {
        let waiters = state.withLock { state -> [Waiter] in
            if state.closedError == nil { state.closedError = error }
            defer { state.waiters.removeAll() }
            return state.waiters
        }
        for waiter in waiters { waiter.continuation.resume(throwing: error) }
    }

    /// Stops taking frames, queues `last` (if any) behind everything already queued and, once all of it is
    /// written, ends the channel as `ending` says. After `timeout` the channel is closed regardless, so a peer
    /// that stopped reading cannot hold a connection open.
    func finish(sending last: Frame?, then ending: Ending, timeout: Duration, reason: any Error) {
        let endNow: Bool = state.withLock { state in
            guard state.ending == nil else { return false }
            state.ending = ending
            if let last { append(last, to: &state) }
            if state.closedError == nil { state.closedError = reason }
            return state.queuedBytes == 0 && !state.flushScheduled
        }
        close(reason)
        if endNow { end(ending) }
        let channel = self.channel
        channel.eventLoop.scheduleTask(in: TimeAmount(timeout)) { channel.close(promise: nil) }
    }

    private func end(_ ending: Ending) {
        switch ending {
        case .halfClose: channel.close(mode: .output, promise: nil)
        case .close: channel.close(promise: nil)
        }
    }

    private func append(_ frame: Frame, to state: inout State) {
        let size = FrameLayout.prefixSize + frame.bodySize
        state.pending.append(frame)
        state.pendingBytes += size
        state.queuedBytes += size
        if !state.flushScheduled {
            state.flushScheduled = true
            channel.eventLoop.execute { self.flush() }
        }
    }

    private func flush() {
        let (batch, batchBytes) = state.withLock { state in
            state.flushScheduled = false
            defer {
                state.pending.removeAll(keepingCapacity: true)
                state.pendingBytes = 0
            }
            return (state.pending, state.pendingBytes)
        }
        guard let last = batch.last else { return }
        for frame in batch.dropLast() { channel.write(frame, promise: nil) }
        let written = channel.eventLoop.makePromise(of: Void.self)
        channel.writeAndFlush(last, promise: written)
        written.futureResult.whenComplete { result in
            if case .failure(let error) = result { self.close(error) }
            self.release(batchBytes)
        }
    }

    private func release(_ bytes: Int) {
        let (woken, ending) = state.withLock { state -> ([Waiter], Ending?) in
            state.queuedBytes -= bytes
            let ending = state.queuedBytes == 0 && !state.flushScheduled ? state.ending : nil
            guard state.queuedBytes < lowWatermark || state.closedError != nil else { return ([], ending) }
            defer { state.waiters.removeAll() }
            return (state.waiters, ending)
        }
        for waiter in woken { waiter.continuation.resume() }
        if let ending { end(ending) }
    }

    private func waitForRoom() async throws {
        let id = state.withLock { state -> UInt64 in
            state.nextWaiterID += 1
            return state.nextWaiterID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let immediate: Result<Void, any Error>? = state.withLock { state in
                    if let error = state.closedError { return .failure(error) }
                    if Task.isCancelled { return .failure(CancellationError()) }
                    if state.queuedBytes < lowWatermark && state.waiters.isEmpty { return .success(()) }
                    state.waiters.append(Waiter(id: id, continuation: continuation))
                    return nil
                }
                if let immediate { continuation.resume(with: immediate) }
            }
        } onCancel: {
            let cancelled = state.withLock { state -> Waiter? in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiters.remove(at: index)
            }
            cancelled?.continuation.resume(throwing: CancellationError())
        }
    }
}
