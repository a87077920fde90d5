import NIOCore
import ParleyWire
import Synchronization

/// The single way frames leave a connection. It batches and bounds what is written:
/// - frames enqueued between two event-loop turns go out with one flush (one vectored write), so small
///   messages do not each cost a system call;
/// - one batch (at most ``maximumBatchFrames`` frames and, unless one frame is larger, ``maximumBatchBytes``) is
///   written at a time, and the next only once the kernel has taken it: frames wait here, not in NIO, while the
///   socket is full; a long queue is written in turns with the loop's other work, and each batch taken counts as
///   progress for the stall timeout below;
/// - bytes not yet handed to the kernel are counted, and `enqueue` waits while they are above the high
///   watermark until they drain below the low one, so a peer that stops reading cannot make memory grow;
/// - a wait can be bounded by a stall timeout: it fails with ``OutboundQueueStalled`` only if *nothing* left the
///   queue for that long. A peer that reads, however slowly, is not a stalled one (draining 6 MiB of small
///   messages down to the low watermark can take longer than any fixed timeout).
final class OutboundQueue: Sendable {
    private struct Waiter {
        var id: UInt64
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var pending = CircularBuffer<Frame>()
        /// A flush is scheduled, or a batch is being written: frames appended meanwhile wait for the next batch.
        var flushing = false
        /// Frames wait, unwritten, until ``release()``: the handshake's last frames are still to go out first.
        var held = false
        /// Bytes enqueued and not yet written to the socket (pending plus handed to NIO).
        var queuedBytes = 0
        var waiters: [Waiter] = []
        var nextWaiterID: UInt64 = 0
        var closedError: (any Error)?
        var ending: Ending?
        /// When a batch last reached the kernel (or the queue was made), on the event loop's clock.
        var lastProgress: NIODeadline
    }

    /// What happens to the channel once a finished queue has written everything.
    enum Ending: Sendable {
        /// Shut down our sending side and keep reading until the peer closes (nothing in flight is lost).
        case halfClose
        /// Close the channel.
        case close
    }

    /// Frames per batch. `writev` takes at most 1024 buffers (IOV_MAX) at once anyway. A queue of small messages
    /// can hold a hundred thousand frames: handed to NIO in one go (as before), that kept the event loop busy for
    /// seconds without reading any socket, and connections on it were dropped as silent (the 200-peer load test).
    static let maximumBatchFrames = 1024
    /// Bytes per batch (one larger frame goes alone): a batch taken by the kernel is the unit of progress a stall
    /// timeout sees, so a peer reading slowly shows progress at least every 64 KiB it reads.
    static let maximumBatchBytes = 64 * 1024
    /// Frames of room in the queue's buffers above which the room is given back once the queue is empty.
    static let burstCapacity = maximumBatchFrames * 4

    private let channel: any Channel
    /// Frames the event loop has taken from `pending` in one go and not yet handed to NIO. Only the event loop
    /// touches it, so its lock is never contended: senders and the writing loop meet on the state's lock for one
    /// swap per batch instead of once per frame.
    private let taken = Mutex(CircularBuffer<Frame>())
    private let highWatermark: Int
    private let lowWatermark: Int
    private let state: Mutex<State>

    /// Where queued bytes are charged; nil for a connection outside the node's memory budget.
    private let budget: BudgetTap?

    init(channel: any Channel, highWatermark: Int, lowWatermark: Int, budget: BudgetTap? = nil) {
        self.channel = channel
        self.budget = budget
        // At least one byte each, low not above high: otherwise waiting senders could never be woken.
        self.highWatermark = max(1, highWatermark)
        self.lowWatermark = max(1, min(lowWatermark, self.highWatermark))
        // The loop's clock, like every deadline here: a test loop's time starts at zero, not at the uptime.
        self.state = Mutex(State(lastProgress: channel.eventLoop.now))
    }

    var queuedBytes: Int { state.withLock { $0.queuedBytes } }

    /// Frames the queue's two buffers have room for: the senders' and the one the loop writes from (for tests).
    var room: (senders: Int, writer: Int) { (state.withLock { $0.pending.capacity }, taken.withLock { $0.capacity }) }

    /// Senders waiting in ``enqueue(_:stallTimeout:)`` for the queue to drain (tests wait for this state).
    var waitingSenders: Int { state.withLock { $0.waiters.count } }

    /// Queues `frame`, waiting first while the queue is above its high watermark. Throws once the queue is closed,
    /// and ``OutboundQueueStalled`` if it waited `stallTimeout` without a byte leaving the queue.
    ///
    /// Inlined into its callers, the common case (room in the queue) makes no async call: each costs a frame
    /// allocation, and this runs for every message sent.
    @inline(__always)
    func enqueue(_ frame: Frame, stallTimeout: Duration? = nil) async throws {
        if try enqueueIfRoom(frame) { return }
        try await enqueueWhenRoom(frame, stallTimeout: stallTimeout)
    }

    private func enqueueWhenRoom(_ frame: Frame, stallTimeout: Duration?) async throws {
        repeat {
            try await waitForRoom(stallTimeout: stallTimeout.map(TimeAmount.init))
        } while try !enqueueIfRoom(frame)
    }

    /// Queues `frame` if that needs no waiting; returns false (and queues nothing) when the queue is full.
    func enqueueIfRoom(_ frame: Frame) throws -> Bool {
        try enqueueIfRoom(CollectionOfOne(frame))
    }

    /// Whether ``enqueueIfRoom(_:evenIfFull:)`` would queue now: open, below the high watermark, nobody waiting.
    var hasRoom: Bool {
        state.withLock { $0.closedError == nil && $0.queuedBytes < highWatermark && $0.waiters.isEmpty }
    }

    /// Queues all of `frames` if the queue is below its high watermark (which they may then go past together), with
    /// one lock and one charge to the budget; returns false, and queues none of them, when it is full. `evenIfFull`:
    /// queued past the watermark as well (a caller that found room a moment ago, and must not queue to some of its
    /// peers only); the memory budget still applies.
    func enqueueIfRoom(_ frames: some Collection<Frame>, evenIfFull: Bool = false) throws -> Bool {
        let size = frames.reduce(0) { $0 + Self.size(of: $1) }
        let flush = try state.withLock { state -> Bool? in
            if let error = state.closedError { throw error }
            guard evenIfFull || (state.queuedBytes < highWatermark && state.waiters.isEmpty) else { return nil }
            // Over the node's budget this connection may be the one closed: then nothing is queued.
            if let budget, !budget.budget.charge(size, to: budget.account) {
                throw ConnectionLimitExceeded.memoryBudget(held: budget.account.held, capacity: budget.budget.capacity)
            }
            return append(frames, size: size, to: &state)
        }
        guard let flush else { return false }
        if flush { scheduleFlush() }
        return true
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
    /// ``finish(sending:then:timeout:reason:)`` was called: this side has begun to end the connection.
    var isFinishing: Bool { state.withLock { $0.ending != nil } }

    func finish(sending last: Frame?, then ending: Ending, timeout: Duration, reason: any Error) {
        let (endNow, flush) = state.withLock { state -> (Bool, Bool) in
            guard state.ending == nil else { return (false, false) }
            state.ending = ending
            var flush = false
            if let last {
                // Charged like any frame, so that its write returns what it took; a closed account ignores both.
                if let budget { _ = budget.budget.charge(Self.size(of: last), to: budget.account) }
                flush = append(CollectionOfOne(last), size: Self.size(of: last), to: &state)
            }
            if state.closedError == nil { state.closedError = reason }
            return (state.queuedBytes == 0 && !state.flushing, flush)
        }
        if flush { scheduleFlush() }
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

    /// Queues `frame`; true when the caller is to schedule a flush (``scheduleFlush()``), once out of the lock.
    private func append(_ frames: some Collection<Frame>, size: Int, to state: inout State) -> Bool {
        state.pending.append(contentsOf: frames)
        state.queuedBytes += size
        return startFlushing(&state)
    }

    /// Marks a flush as scheduled if one is due; true when it is, and the caller is to schedule it. Scheduled out
    /// of the state's lock: handing a task to another event loop takes that loop's lock and may wake it with a
    /// system call, and the loop writing this queue waits on the state's lock meanwhile.
    private func startFlushing(_ state: inout State) -> Bool {
        guard !state.flushing, !state.held, !state.pending.isEmpty else { return false }
        state.flushing = true
        return true
    }

    private func scheduleFlush() {
        channel.eventLoop.execute { self.flush() }
    }

    /// Holds back what is queued from now on until ``release()``. A peer is registered (and so can be sent to)
    /// just before the handshake's last frames are written: that way the remote side, whose handshake those frames
    /// complete, is known here by the time it hears of it, but nothing may overtake them on the wire.
    func hold() {
        state.withLock { $0.held = true }
    }

    /// Writes what was held back, after whatever was written to the channel before this call.
    func release() {
        let flush = state.withLock { state in
            state.held = false
            return startFlushing(&state)
        }
        if flush { scheduleFlush() }
    }

    /// Writes the next batch; once the kernel has taken all of it, the batch after that. Runs on the event loop.
    private func flush() {
        let (batch, bytes) = taken.withLock { taken -> ([Frame], Int) in
            var batch: [Frame] = []
            var bytes = 0
            /// Moves frames from `taken` into the batch; false once the batch is full.
            func fill() -> Bool {
                batch.reserveCapacity(min(batch.count + taken.count, Self.maximumBatchFrames))
                while let next = taken.first {
                    let size = Self.size(of: next)
                    if batch.count == Self.maximumBatchFrames || (!batch.isEmpty && bytes + size > Self.maximumBatchBytes) {
                        return false
                    }
                    batch.append(taken.removeFirst())
                    bytes += size
                }
                return true
            }
            if fill() {
                // All taken frames are in the batch: take what the senders queued since, in one swap. They get the
                // emptied buffer back with its room (a fresh one regrew by doubling under their appends, a visible
                // share of forwarding), for as long as a backlog lasts: once both are empty, room made for a burst
                // goes, and is not kept for the connection's life.
                // Returns the senders' buffer when it is given up, so that it is freed out of the state's lock.
                _ = state.withLock { state -> CircularBuffer<Frame>? in
                    if state.pending.isEmpty {
                        if batch.isEmpty { state.flushing = false }
                        guard state.pending.capacity > Self.burstCapacity else { return nil }
                        defer { state.pending = CircularBuffer() }
                        return state.pending
                    }
                    swap(&taken, &state.pending)
                    // Fewer than a batch queued since: the backlog is over, and the senders get a fresh buffer
                    // rather than the large one back.
                    guard state.pending.capacity > Self.burstCapacity, taken.count < Self.maximumBatchFrames else { return nil }
                    defer { state.pending = CircularBuffer() }
                    return state.pending
                }
                _ = fill()
                if taken.isEmpty, taken.capacity > Self.burstCapacity { taken = CircularBuffer() }
            }
            return (batch, bytes)
        }
        guard !batch.isEmpty else { return }
        let written = channel.eventLoop.makePromise(of: Void.self)
        channel.writeAndFlush(FrameBatch(batch), promise: written)
        written.futureResult.whenComplete { result in
            if case .failure(let error) = result { self.close(error) }
            self.written(bytes)
        }
    }

    private static func size(of frame: Frame) -> Int { frame.wireSize }

    /// A batch has left: wakes waiting senders below the low watermark, then writes the next batch or, once all
    /// is written and the queue finished, ends the channel.
    private func written(_ bytes: Int) {
        if let budget { budget.budget.release(bytes, from: budget.account) }
        // Frames taken but not yet written (only this event loop changes that).
        let backlog = !taken.withLock { $0.isEmpty }
        let (woken, ending, more) = state.withLock { state -> ([Waiter], Ending?, Bool) in
            state.queuedBytes -= bytes
            state.lastProgress = channel.eventLoop.now
            state.flushing = !state.pending.isEmpty || backlog
            let ending = state.queuedBytes == 0 && !state.flushing ? state.ending : nil
            guard state.queuedBytes < lowWatermark || state.closedError != nil else { return ([], ending, state.flushing) }
            defer { state.waiters.removeAll() }
            return (state.waiters, ending, state.flushing)
        }
        for waiter in woken { waiter.continuation.resume() }
        if let ending { end(ending) }
        // A new event-loop task rather than a call: a kernel that takes every batch at once must not deepen the stack.
        if more { scheduleFlush() }
    }

    private func waitForRoom(stallTimeout: TimeAmount?) async throws {
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
                if let immediate {
                    continuation.resume(with: immediate)
                } else if let stallTimeout {
                    watchForStall(of: id, timeout: stallTimeout)
                }
            }
        } onCancel: {
            let cancelled = state.withLock { state -> Waiter? in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiters.remove(at: index)
            }
            cancelled?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Fails waiter `id` with ``OutboundQueueStalled`` once nothing has left the queue for `timeout` (counted from
    /// the later of its first wait and the queue's last progress), by a ``SilenceTimer``: a loop too busy to write
    /// says nothing about the peer. The watch ends by itself once the waiter got room or gave up.
    private func watchForStall(of id: UInt64, timeout: TimeAmount) {
        let loop = channel.eventLoop
        // From when the sender began to wait, not from when the loop got to this: a busy loop must not extend it.
        let start = loop.now
        loop.execute {
            let lastProgress = { () -> NIODeadline? in
                self.state.withLock { state in
                    state.waiters.contains { $0.id == id } ? max(start, state.lastProgress) : nil
                }
            }
            let timer = SilenceTimer(on: loop, timeout: timeout, lastActivity: lastProgress) { _ in
                let stalled = self.state.withLock { state -> Waiter? in
                    guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                    return state.waiters.remove(at: index)
                }
                stalled?.continuation.resume(throwing: OutboundQueueStalled(timeout: timeout))
            }
            // The timer's scheduled task holds it until it ends.
            timer.start()
        }
    }
}

/// Nothing left a connection's send queue for `timeout` while a sender waited for room: the peer is not reading.
struct OutboundQueueStalled: Error {
    var timeout: TimeAmount
}
