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
        async let waiting = inbox.next()
        // The task parks itself; the batch then goes to it directly, not into the queue.
        try await channel.writeInbound(Self.batch(3))
        #expect(try await waiting == Self.batch(3))
        _ = try await channel.close()
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
        async let waiting = waitingInbox.next()
        try await other.close()
        #expect(try await waiting == nil)
    }

    @Test("cancelling the task that waits ends its wait with nil")
    func cancellation() async throws {
        let (channel, inbox, _) = try await Self.inbox()
        let waiter = Task { try await inbox.next() }
        waiter.cancel()
        #expect(try await waiter.value == nil)
        _ = try await channel.close()
    }
}
