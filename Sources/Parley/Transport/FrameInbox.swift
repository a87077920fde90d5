import NIOCore
import Synchronization

/// The end of a connection's pipeline: the batches ``ReplyResolver`` makes (one per socket read) wait here until
/// the connection's task takes them, at most ``highWatermark`` of them; above that the socket is not read, and TCP
/// pushes back on the sender.
///
/// What `NIOAsyncChannel` did for connections before, written for this one element type: NIO's bridge is generic,
/// and its code ran unspecialised here (it lives in another module), looking up generic metadata at every batch —
/// about a tenth of an echoing peer's CPU per round trip. The contract is the same: batches come out in order;
/// the end of input (the channel closed, the peer shut down its sending side, the handler removed) ends the
/// sequence after the batches already in; an error caught in the pipeline is thrown after them; a cancelled task
/// gets `CancellationError` and the batches still waiting are dropped. Once the sequence has ended the socket is
/// not read again. One task reads an inbox.
final class FrameInbox: ChannelDuplexHandler, Sendable {
    typealias InboundIn = QueuedFrames
    typealias OutboundIn = Any

    /// Batches waiting before reading stops, and below which it resumes. Counted in batches (one per socket read),
    /// not bytes: those of 4 KiB or more are charged to the memory budget while they wait. Four batches hold
    /// thousands of small messages, and about as many large ones as the 16 frames this bound was when frames came
    /// one at a time.
    static let highWatermark = 4
    static let lowWatermark = 2

    private struct State {
        var batches = CircularBuffer<QueuedFrames>(initialCapacity: FrameInbox.highWatermark)
        /// The task waiting for a batch; there is one only while `batches` is empty.
        var waiter: UnsafeContinuation<Taken, Never>?
        var ended = false
        /// Thrown once, after the batches that came before it.
        var failure: (any Error)?
        /// A read NIO asked for was held back because `batches` was full.
        var readHeld = false

        /// The parked task, taken out to be resumed once out of the lock.
        mutating func takeWaiter() -> UnsafeContinuation<Taken, Never>? {
            defer { waiter = nil }
            return waiter
        }
    }

    private enum Taken: Sendable {
        case batch(QueuedFrames, resumeReading: Bool)
        case end((any Error)?)
        case none
    }

    private let state = Mutex(State())
    private let eventLoop: any EventLoop
    /// Set while the handler is in a pipeline; touched only on the event loop.
    private let context: NIOLoopBoundBox<ChannelHandlerContext?>

    /// Told once, when the sequence ends: input ended, or the reading task was cancelled.
    private let onInputEnd: (@Sendable () -> Void)?

    init(eventLoop: any EventLoop, onInputEnd: (@Sendable () -> Void)? = nil) {
        self.eventLoop = eventLoop
        self.onInputEnd = onInputEnd
        self.context = .makeEmptyBox(valueType: ChannelHandlerContext.self, eventLoop: eventLoop)
    }

    // MARK: - The connection's task

    /// The next batch, in arrival order; nil once input has ended and every batch before the end was taken.
    func next() async throws -> QueuedFrames? {
        if Task.isCancelled {
            cancel()
            throw CancellationError()
        }
        var taken = state.withLock { Self.take(from: &$0) }
        if case .none = taken { taken = await park() }
        switch taken {
        case .batch(let batch, let resumeReading):
            if resumeReading { self.resumeReading() }
            return batch
        case .end(let failure?): throw failure
        case .end(nil), .none: return nil
        }
    }

    /// Waits for what there was none of when `next()` looked: a batch, or the end.
    private func park() async -> Taken {
        await withTaskCancellationHandler {
            await withUnsafeContinuation { waiter in
                // Taken again under the lock that parks the waiter: a batch or the end may have come since.
                let taken = state.withLock { state in
                    let taken = Self.take(from: &state)
                    if case .none = taken {
                        precondition(state.waiter == nil, "two tasks read one FrameInbox")
                        state.waiter = waiter
                    }
                    return taken
                }
                switch taken {
                case .none: break
                // Cancelled before it could park: `cancel()` ended the sequence and found no one to tell.
                case .end(nil) where Task.isCancelled: waiter.resume(returning: .end(CancellationError()))
                default: waiter.resume(returning: taken)
                }
            }
        } onCancel: {
            self.cancel()
        }
    }

    private static func take(from state: inout State) -> Taken {
        if let batch = state.batches.popFirst() {
            let resume = state.readHeld && state.batches.count < lowWatermark
            if resume { state.readHeld = false }
            return .batch(batch, resumeReading: resume)
        }
        guard state.ended else { return .none }
        defer { state.failure = nil }
        return .end(state.failure)
    }

    private func resumeReading() {
        if eventLoop.inEventLoop {
            context.value?.read()
        } else {
            eventLoop.execute { self.context.value?.read() }
        }
    }

    /// The reading task was cancelled: the sequence ends, what waits is dropped, and the task gets
    /// `CancellationError` (thrown by `next()` itself, or given to it if it is parked).
    private func cancel() {
        let (first, waiter) = state.withLock { state in
            defer { state.ended = true }
            state.batches.removeAll()
            return (!state.ended, state.takeWaiter())
        }
        waiter?.resume(returning: .end(CancellationError()))
        if first { onInputEnd?() }
    }

    /// Whether a task is parked waiting for a batch (for tests).
    var hasWaiter: Bool { state.withLock { $0.waiter != nil } }

    /// Ends the sequence after the batches already in; the first end counts.
    private func end(failure: (any Error)?) {
        let (first, waiter) = state.withLock { state -> (Bool, UnsafeContinuation<Taken, Never>?) in
            guard !state.ended else { return (false, nil) }
            state.ended = true
            if let waiter = state.takeWaiter() { return (true, waiter) }
            state.failure = failure
            return (true, nil)
        }
        waiter?.resume(returning: .end(failure))
        if first { onInputEnd?() }
    }

    // MARK: - The event loop

    func handlerAdded(context: ChannelHandlerContext) {
        self.context.value = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context.value = nil
        end(failure: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let batch = unwrapInboundIn(data)
        let waiter = state.withLock { state -> UnsafeContinuation<Taken, Never>? in
            guard !state.ended else { return nil }
            if let waiter = state.takeWaiter() { return waiter }
            state.batches.append(batch)
            return nil
        }
        waiter?.resume(returning: .batch(batch, resumeReading: false))
    }

    func read(context: ChannelHandlerContext) {
        let hold = state.withLock { state in
            // Once ended, nothing more is taken: what the socket still brings would only be dropped.
            if state.ended { return true }
            if state.batches.count >= Self.highWatermark { state.readHeld = true }
            return state.readHeld
        }
        if !hold { context.read() }
    }

    func channelInactive(context: ChannelHandlerContext) {
        end(failure: nil)
        context.fireChannelInactive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed { end(failure: nil) }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        end(failure: error)
        context.fireErrorCaught(error)
    }
}
