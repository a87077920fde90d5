import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
@testable import Parley
import ParleyWire
import Testing

/// The inbox at the end of every connection's pipeline, on a testing channel: the order of batches, reading held
/// while four wait, and how the sequence ends.
@Suite("Frame inbox")
struct FrameInboxTests {
    /// Counts the reads the inbox lets through towards the socket.
    final class ReadCounter: ChannelOutboundHandler, Sendable {
        typealias OutboundIn = Any
        let reads = NIOLockedValueBox(0)
        func read(context: ChannelHandlerContext) {
            reads.withLockedValue { $0 += 1 }
            context.read()
        }
    }

    static func batch(_ id: UInt64) -> QueuedFrames {
        QueuedFrames(frames: [.message(MessageFrame(header: MessageHeader(typeName: "t", id: MessageID(id)), payload: ByteBuffer()))])
    }

    static func inbox() async throws -> (NIOAsyncTestingChannel, FrameInbox, ReadCounter) {
        let channel = NIOAsyncTestingChannel()
        let counter = ReadCounter()
        let inbox = FrameInbox(eventLoop: channel.eventLoop)
        try await channel.pipeline.addHandlers([counter, inbox])
        try await channel.connect(to: SocketAddress(ipAddress: "10.0.0.2", port: 7206))
        return (channel, inbox, counter)
    }

    @Test("batches come out in arrival order, and a task waiting for one is woken by the next read")
    func order() async throws {
        let (channel, inbox, _) = try await Self.inbox()
        try await channel.writeInbound(Self.batch(1))
        try await channel.writeInbound(Self.batch(2))
        #expect(try await inbox.next() == Self.batch(1))
        #expect(try await inbox.next() == Self.batch(2))
        let waiting = Task { try await inbox.next() }
        await Self.parked(inbox)
        // The batch goes to the parked task directly, not into the queue.
        try await channel.writeInbound(Self.batch(3))
        #expect(try await waiting.value == Self.batch(3))
        _ = try await channel.close()
    }

    /// Returns once a task is parked in `inbox.next()`.
    static func parked(_ inbox: FrameInbox) async {
        while !inbox.hasWaiter { await Task.yield() }
    }

    @Test("reading stops while four batches wait and resumes once fewer than two do")
    func backpressure() async throws {
        let (channel, inbox, counter) = try await Self.inbox()
        for id in 1...3 { try await channel.writeInbound(Self.batch(UInt64(id))) }
        // `read()` from outside the loop is run by the loop: `run()` runs it.
        channel.read()
        await channel.testingEventLoop.run()
        #expect(counter.reads.withLockedValue { $0 } == 1, "three batches waiting: the read goes through")
        try await channel.writeInbound(Self.batch(4))
        channel.read()
        channel.read()
        await channel.testingEventLoop.run()
        #expect(counter.reads.withLockedValue { $0 } == 1, "four waiting: reads are held")
        #expect(try await inbox.next() == Self.batch(1))
        #expect(try await inbox.next() == Self.batch(2))
        await channel.testingEventLoop.run()
        #expect(counter.reads.withLockedValue { $0 } == 1, "two still waiting: still held")
        #expect(try await inbox.next() == Self.batch(3))
        await channel.testingEventLoop.run()
        #expect(counter.reads.withLockedValue { $0 } == 2, "one left: the held read goes through, once")
        #expect(try await inbox.next() == Self.batch(4))
        _ = try await channel.close()
    }

    @Test("the peer shutting down its side ends the sequence after the batches already in")
    func inputClosed() async throws {
        let (channel, inbox, _) = try await Self.inbox()
        try await channel.writeInbound(Self.batch(1))
        channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        try await channel.writeInbound(Self.batch(2))
        #expect(try await inbox.next() == Self.batch(1))
        #expect(try await inbox.next() == nil, "what came after the end is not handed out")
        #expect(try await inbox.next() == nil)
        _ = try await channel.close()
    }

    @Test("an error in the pipeline is thrown after the batches before it, once; a closed channel ends a waiting task")
    func errorAndClose() async throws {
        struct Broken: Error, Equatable {}
        let (channel, inbox, _) = try await Self.inbox()
        try await channel.writeInbound(Self.batch(1))
        channel.pipeline.fireErrorCaught(Broken())
        #expect(try await inbox.next() == Self.batch(1))
        await #expect(throws: Broken.self) { try await inbox.next() }
        #expect(try await inbox.next() == nil)
        _ = try? await channel.close()

        let (other, waitingInbox, _) = try await Self.inbox()
        let waiting = Task { try await waitingInbox.next() }
        await Self.parked(waitingInbox)
        try await other.close()
        #expect(try await waiting.value == nil)
    }

    @Test("the handler removed from the pipeline ends the sequence after the batches already in")
    func removed() async throws {
        let (channel, inbox, _) = try await Self.inbox()
        try await channel.writeInbound(Self.batch(1))
        try await channel.pipeline.removeHandler(inbox)
        #expect(try await inbox.next() == Self.batch(1))
        #expect(try await inbox.next() == nil)
        _ = try await channel.close()
    }

    @Test("once the sequence has ended, the socket is not read again")
    func noReadsAfterEnd() async throws {
        let (channel, inbox, counter) = try await Self.inbox()
        channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        #expect(try await inbox.next() == nil)
        channel.read()
        await channel.testingEventLoop.run()
        #expect(counter.reads.withLockedValue { $0 } == 0)
        _ = try await channel.close()
    }

    @Test("batches written while the task takes them, from another thread, all come out once and in order")
    func concurrentOrder() async throws {
        let (channel, inbox, _) = try await Self.inbox()
        let count = 2_000
        let reader = Task {
            var ids: [MessageID] = []
            while ids.count < count, let batch = try await inbox.next() {
                if case .message(let message) = batch.frames[0] { ids.append(message.header.id) }
            }
            return ids
        }
        for id in 1...count { try await channel.writeInbound(Self.batch(UInt64(id))) }
        #expect(try await reader.value == (1...count).map { MessageID(UInt64($0)) })
        _ = try await channel.close()
    }

    @Test("cancelling the task that waits ends its wait with CancellationError; a cancelled task gets no more batches")
    func cancellation() async throws {
        let (channel, inbox, _) = try await Self.inbox()
        let waiter = Task { try await inbox.next() }
        await Self.parked(inbox)
        waiter.cancel()
        await #expect(throws: CancellationError.self) { try await waiter.value }

        let (other, queued, _) = try await Self.inbox()
        try await other.writeInbound(Self.batch(1))
        let cancelled = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await queued.next()
        }
        await #expect(throws: CancellationError.self) { try await cancelled.value }
        #expect(try await queued.next() == nil, "the batch that waited was dropped")
        _ = try await channel.close()
        _ = try await other.close()
    }
}

/// Removable in tests, to see what removal does (in a connection it is removed only when the channel closes).
extension FrameInbox: RemovableChannelHandler {}
