/// Messages for one receiver, sent one at a time and in the order they were queued, by one task that lives as long
/// as the outbox. A task per message would not keep that order: two quick changes could reach parleyd the wrong way
/// round and leave it showing a stale value.
///
/// ``enqueue(_:)`` never waits, so that it can be called under a lock (the drawer queues a message in the same
/// critical section that changes the value it reports: the queue's order is the order of the changes).
final class DrawerOutbox<Message: Sendable>: Sendable {
    private let continuation: AsyncStream<Message>.Continuation
    private let sender: Task<Void, Never>

    /// `send` is called for each message in turn; the next one waits until it returns.
    init(send: @escaping @Sendable (Message) async -> Void) {
        let (stream, continuation) = AsyncStream.makeStream(of: Message.self, bufferingPolicy: .unbounded)
        self.continuation = continuation
        sender = Task {
            for await message in stream {
                // Cancelled: the receiver went away, and what is still queued is for nobody.
                guard !Task.isCancelled else { return }
                await send(message)
            }
        }
    }

    deinit { continuation.finish() }

    func enqueue(_ message: Message) { continuation.yield(message) }

    /// Takes no more messages; those already queued are still sent.
    func finish() { continuation.finish() }

    /// Takes no more messages and drops those not yet sent (the one being sent, if any, completes).
    func cancel() {
        continuation.finish()
        sender.cancel()
    }

    /// Returns once the sender has stopped: after ``finish()``, when every queued message has been sent.
    func drained() async { await sender.value }
}
