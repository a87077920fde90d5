import NIOCore
import NIOEmbedded
@testable import Parley
import ParleyWire
import Synchronization
import Testing

/// The reply path and the outbound queue on testing channels: no sockets, time moved by hand. A "socket" that
/// takes writes only when told stands in for a peer that stopped reading.
@Suite("Reply resolution and the outbound queue without sockets")
struct QueueAndReplyHandlerTests {
    static let alice = PeerID()

    static func note(_ id: UInt64, inReplyTo: UInt64? = nil, bytes: Int = 2) -> Frame {
        .message(
            MessageFrame(
                header: MessageHeader(typeName: "test.Note", id: MessageID(id), inReplyTo: inReplyTo.map { MessageID($0) }),
                payload: ByteBuffer(repeating: UInt8(ascii: "x"), count: bytes)
            ))
    }

    // MARK: - ReplyResolver

    static func resolving(handshakeDone: Bool) throws -> (EmbeddedChannel, PeerConnection, PendingRequests, StatisticsCounters) {
        let channel = EmbeddedChannel()
        let requests = PendingRequests()
        let counters = StatisticsCounters()
        let connection = PeerConnection(
            channel: channel, role: .dialer, sharedSecret: nil, requests: requests,
            configuration: TransceiverConfiguration(name: "test")
        )
        if handshakeDone {
            connection.peer = Peer(id: alice, name: "alice", address: "10.0.0.2:7206", protocolVersion: 1, accepts: [])
        }
        try channel.pipeline.syncOperations.addHandler(ReplyResolver(connection: connection, counters: counters))
        return (channel, connection, requests, counters)
    }

    @Test("a reply completes its request on the loop and goes no further; other messages pass on in order")
    func repliesResolve() async throws {
        let (channel, _, requests, counters) = try Self.resolving(handshakeDone: true)
        let slot = requests.register(MessageID(7), to: Self.alice, deadline: .distantFuture, timerOn: channel.eventLoop)
        let failed = requests.register(MessageID(8), to: Self.alice, deadline: .distantFuture, timerOn: channel.eventLoop)
        try channel.writeFrames(Self.note(1))
        try channel.writeFrames(Self.note(2, inReplyTo: 7))
        try channel.writeFrames(Frame.errorReply(ErrorReplyFrame(inReplyTo: MessageID(8), code: .handlerFailed, message: "no")))
        try channel.writeFrames(Self.note(3))

        guard case .message(let reply) = try await slot.value() else {
            Issue.record("the request was not answered with the reply message")
            return
        }
        #expect(reply.header.id == MessageID(2))
        guard case .error(let error) = try await failed.value() else {
            Issue.record("the error reply did not complete its request")
            return
        }
        #expect(error.code == .handlerFailed)
        #expect(try channel.readInbound(as: QueuedFrames.self) == QueuedFrames(frames: [Self.note(1)]))
        #expect(try channel.readInbound(as: QueuedFrames.self) == QueuedFrames(frames: [Self.note(3)]))
        #expect(try channel.readInbound(as: QueuedFrames.self) == nil)
        #expect(counters.messagesReceived.load(ordering: .relaxed) == 1)
        #expect(counters.lateReplies.load(ordering: .relaxed) == 0)
    }

    @Test("the frames of one read reach the handlers' queue together when the read completes, replies taken out; an error or the end of input comes after them")
    func batchesPerRead() async throws {
        let (channel, _, requests, _) = try Self.resolving(handshakeDone: true)
        let slot = requests.register(MessageID(7), to: Self.alice, deadline: .distantFuture, timerOn: channel.eventLoop)
        let pipeline = channel.pipeline.syncOperations
        // Two batches from one socket read (the decoder passes on one per chunk of bytes it is given).
        pipeline.fireChannelRead(NIOAny(FrameBatch([Self.note(1), Self.note(2, inReplyTo: 7)])))
        pipeline.fireChannelRead(NIOAny(FrameBatch([Self.note(3)])))
        #expect(try channel.readInbound(as: QueuedFrames.self) == nil, "nothing passes on before the read completes")
        pipeline.fireChannelReadComplete()
        #expect(try channel.readInbound(as: QueuedFrames.self) == QueuedFrames(frames: [Self.note(1), Self.note(3)]))
        guard case .message(let reply) = try await slot.value() else {
            Issue.record("the reply in the middle of the read did not complete its request")
            return
        }
        #expect(reply.header.id == MessageID(2))

        // Frames read before a decoding error are passed on before it; so before the end of input, or of the connection.
        final class Order: ChannelInboundHandler {
            typealias InboundIn = QueuedFrames
            var events: [String] = []
            func channelRead(context: ChannelHandlerContext, data: NIOAny) { events.append("batch of \(unwrapInboundIn(data).frames.count)") }
            func errorCaught(context: ChannelHandlerContext, error: any Error) { events.append("error") }
            func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) { events.append("input closed") }
            func channelInactive(context: ChannelHandlerContext) { events.append("inactive") }
        }
        let order = Order()
        try pipeline.addHandler(order)
        pipeline.fireChannelRead(NIOAny(FrameBatch([Self.note(4)])))
        pipeline.fireErrorCaught(WireError.frameTooLarge(length: 1, maximum: 0))
        pipeline.fireChannelRead(NIOAny(FrameBatch([Self.note(5)])))
        pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        pipeline.fireChannelRead(NIOAny(FrameBatch([Self.note(6)])))
        pipeline.fireChannelInactive()
        #expect(order.events == ["batch of 1", "error", "batch of 1", "input closed", "batch of 1", "inactive"])
    }

    @Test("a reply nobody waits for is counted as late and dropped; before the handshake everything passes on")
    func lateAndEarly() throws {
        let (channel, _, _, counters) = try Self.resolving(handshakeDone: true)
        try channel.writeFrames(Self.note(2, inReplyTo: 99), Frame.errorReply(ErrorReplyFrame(inReplyTo: MessageID(98), code: .handlerFailed, message: "late")))
        #expect(try channel.readInbound(as: QueuedFrames.self) == nil)
        #expect(counters.lateReplies.load(ordering: .relaxed) == 2)

        let (early, _, requests, earlyCounters) = try Self.resolving(handshakeDone: false)
        _ = requests.register(MessageID(7), to: Self.alice, deadline: .distantFuture, timerOn: early.eventLoop)
        try early.writeFrames(Self.note(2, inReplyTo: 7))
        #expect(try early.readInbound(as: QueuedFrames.self) == QueuedFrames(frames: [Self.note(2, inReplyTo: 7)]), "the handshake decides what an early frame is")
        #expect(earlyCounters.lateReplies.load(ordering: .relaxed) == 0)
    }

    // MARK: - Request deadlines

    @Test("each request fails at its own deadline, not before, whatever order they were sent in; one answered in time does not")
    func requestDeadlines() async throws {
        let loop = EmbeddedEventLoop()
        let requests = PendingRequests()
        let bob = PeerID()
        let start = loop.now
        let slow = requests.register(MessageID(1), to: Self.alice, deadline: start + .seconds(3), timerOn: loop)
        let answered = requests.register(MessageID(2), to: Self.alice, deadline: start + .seconds(2), timerOn: loop)
        // Sent after the others, with a shorter timeout: due first.
        let short = requests.register(MessageID(3), to: Self.alice, deadline: start + .seconds(1), timerOn: loop)
        let toBob = requests.register(MessageID(4), to: bob, deadline: start + .seconds(1), timerOn: loop)

        loop.advanceTime(to: start + .milliseconds(999))
        #expect(requests.count == 4)
        loop.advanceTime(to: start + .seconds(1))
        await #expect(throws: TimeoutExpired.self) { try await short.value() }
        await #expect(throws: TimeoutExpired.self) { try await toBob.value() }
        #expect(requests.count == 2)

        loop.advanceTime(to: start + .milliseconds(1500))
        let reply = InboundMessage(header: MessageHeader(typeName: "test.Note", id: MessageID(9), inReplyTo: MessageID(2)), payload: ByteBuffer())
        #expect(requests.resolve(MessageID(2), from: Self.alice, with: .success(.message(reply))))
        guard case .message(let answer) = try await answered.value() else {
            Issue.record("the answered request did not get its reply")
            return
        }
        #expect(answer.header.id == MessageID(9))

        // Due between the deadlines already known: the timer is re-armed for it.
        let added = requests.register(MessageID(5), to: Self.alice, deadline: start + .milliseconds(2500), timerOn: loop)
        loop.advanceTime(to: start + .milliseconds(2499))
        #expect(requests.count == 2)
        loop.advanceTime(to: start + .milliseconds(2500))
        await #expect(throws: TimeoutExpired.self) { try await added.value() }
        loop.advanceTime(to: start + .milliseconds(2999))
        #expect(requests.count == 1)
        loop.advanceTime(to: start + .seconds(3))
        await #expect(throws: TimeoutExpired.self) { try await slow.value() }
        #expect(requests.count == 0)
        #expect(!requests.resolve(MessageID(1), from: Self.alice, with: .success(.message(reply))), "a timed-out request is gone")
    }

    @Test("a reply counts only from the peer the request went to; a peer that leaves fails its own requests only")
    func repliesFromTheirPeerOnly() async throws {
        let loop = EmbeddedEventLoop()
        let requests = PendingRequests()
        let mallory = PeerID()
        let toAlice = requests.register(MessageID(1), to: Self.alice, deadline: .distantFuture, timerOn: loop)
        let toMallory = requests.register(MessageID(2), to: mallory, deadline: .distantFuture, timerOn: loop)
        let reply = InboundMessage(header: MessageHeader(typeName: "test.Note", id: MessageID(9), inReplyTo: MessageID(1)), payload: ByteBuffer())

        #expect(!requests.resolve(MessageID(1), from: mallory, with: .success(.message(reply))), "another peer guessed the id")
        #expect(!requests.resolve(MessageID(1), from: mallory, with: .failure(TimeoutExpired())))
        struct Gone: Error {}
        requests.failAll(to: mallory, with: Gone())
        await #expect(throws: Gone.self) { try await toMallory.value() }
        #expect(requests.count == 1, "Alice's request still waits")

        #expect(requests.resolve(MessageID(1), from: Self.alice, with: .success(.message(reply))))
        guard case .message(let answer) = try await toAlice.value() else {
            Issue.record("Alice's request did not get her reply")
            return
        }
        #expect(answer.header.id == MessageID(9))
        #expect(requests.count == 0)
    }

    // MARK: - ReadActivityHandler

    @Test("every read is noted at the loop's time, and the first bytes are announced once")
    func readActivity() throws {
        final class FirstBytesCounter: ChannelInboundHandler {
            typealias InboundIn = ByteBuffer
            var count = 0
            func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
                if event is ReadActivityHandler.FirstBytes { count += 1 }
            }
        }
        let channel = EmbeddedChannel()
        let activity = ReadActivity()
        let counter = FirstBytesCounter()
        try channel.pipeline.syncOperations.addHandlers([ReadActivityHandler(activity), counter])
        channel.embeddedEventLoop.advanceTime(by: .seconds(3))
        try channel.writeInbound(ByteBuffer(string: "a"))
        #expect(activity.lastRead == channel.embeddedEventLoop.now)
        channel.embeddedEventLoop.advanceTime(by: .seconds(2))
        try channel.writeInbound(ByteBuffer(string: "b"))
        #expect(activity.lastRead == channel.embeddedEventLoop.now)
        #expect(counter.count == 1)
        #expect(try channel.readInbound(as: ByteBuffer.self) == ByteBuffer(string: "a"))
        #expect(try channel.readInbound(as: ByteBuffer.self) == ByteBuffer(string: "b"))
    }

    // MARK: - OutboundQueue

    /// Stands in for the kernel: passes writes on at once but completes them only when ``take()`` is called, as a
    /// socket whose peer stopped reading does. Counts flushes, the unit the queue batches by.
    final class Kernel: ChannelOutboundHandler, Sendable {
        typealias OutboundIn = FrameBatch
        typealias OutboundOut = FrameBatch
        private struct State {
            var promises: [EventLoopPromise<Void>] = []
            var flushes = 0
            var holding = false
        }
        private let state = Mutex(State())

        init(holding: Bool) { state.withLock { $0.holding = holding } }

        var flushes: Int { state.withLock { $0.flushes } }
        var heldWrites: Int { state.withLock { $0.promises.count } }

        func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
            let holding = state.withLock { state in
                if state.holding, let promise { state.promises.append(promise) }
                return state.holding
            }
            context.write(data, promise: holding ? nil : promise)
        }

        func flush(context: ChannelHandlerContext) {
            state.withLock { $0.flushes += 1 }
            context.flush()
        }

        /// The peer reads everything written so far.
        func take() {
            let promises = state.withLock { state in
                defer { state.promises.removeAll() }
                return state.promises
            }
            for promise in promises { promise.succeed() }
        }
    }

    static func queue(high: Int, low: Int, holding: Bool) async throws -> (NIOAsyncTestingChannel, OutboundQueue, Kernel) {
        let kernel = Kernel(holding: holding)
        let channel = NIOAsyncTestingChannel()
        try await channel.pipeline.addHandler(kernel)
        try await channel.connect(to: SocketAddress(ipAddress: "10.0.0.2", port: 7206))
        return (channel, OutboundQueue(channel: channel, highWatermark: high, lowWatermark: low), kernel)
    }

    /// The frames written so far, and in how many writes.
    static func writes(_ channel: NIOAsyncTestingChannel) async throws -> (frames: [Frame], writes: Int) {
        var frames: [Frame] = []
        var writes = 0
        while let batch = try await channel.readOutbound(as: FrameBatch.self) {
            frames += batch.frames
            writes += 1
        }
        return (frames, writes)
    }

    static func written(_ channel: NIOAsyncTestingChannel) async throws -> [Frame] {
        try await writes(channel).frames
    }

    @Test("frames queued in one turn of the loop leave with one flush, in order; a batch ends at 64 KiB")
    func batching() async throws {
        let (channel, queue, kernel) = try await Self.queue(high: 1 << 24, low: 1 << 20, holding: false)
        let flushesBefore = kernel.flushes
        // Enqueued within one turn of the loop (as a handler's replies are); the flush waits for the next turn.
        let taken = try await channel.testingEventLoop.executeInContext {
            try (1...5).map { try queue.enqueueIfRoom(Self.note(UInt64($0))) }
        }
        #expect(taken.allSatisfy { $0 })
        await channel.testingEventLoop.run()
        let first = try await Self.writes(channel)
        #expect(first.frames == (1...5).map { Self.note(UInt64($0)) })
        #expect(first.writes == 1 && kernel.flushes - flushesBefore == 1, "one write of the batch, one flush")

        // Three 40 KiB frames: no two fit in one 64 KiB batch, so three flushes, each after the last was taken.
        _ = try await channel.testingEventLoop.executeInContext {
            try (6...8).map { try queue.enqueueIfRoom(Self.note(UInt64($0), bytes: 40 * 1024)) }
        }
        await channel.testingEventLoop.run()
        #expect(try await Self.written(channel).count == 3)
        #expect(kernel.flushes - flushesBefore == 4)
        #expect(queue.queuedBytes == 0)
    }

    @Test("room the queue made for a backlog is kept while the backlog lasts, not made again for every batch, and given back once the queue is empty")
    func backlogRoom() async throws {
        let (channel, queue, kernel) = try await Self.queue(high: 1 << 24, low: 1 << 20, holding: true)
        let burst = 3 * OutboundQueue.burstCapacity
        func enqueueBurst(from first: Int) async throws {
            _ = try await channel.testingEventLoop.executeInContext {
                try (first..<first + burst).map { try queue.enqueueIfRoom(Self.note(UInt64($0))) }
            }
        }
        try await enqueueBurst(from: 1)
        await channel.testingEventLoop.run()  // the loop takes the burst and writes its first batch, held
        #expect(queue.room.writer >= burst)
        try await enqueueBurst(from: 1 + burst)  // while the first is still being written
        // A batch at a time, until the loop has written the first burst and taken the second from the senders.
        var written = try await Self.written(channel).count
        while written <= burst {
            kernel.take()
            await channel.testingEventLoop.run()
            written += try await Self.written(channel).count
        }
        #expect(queue.room.senders >= burst, "the senders got the emptied buffer back with its room")
        while queue.queuedBytes > 0 {
            kernel.take()
            await channel.testingEventLoop.run()
            written += try await Self.written(channel).count
        }
        await channel.testingEventLoop.run()
        #expect(queue.room.senders <= OutboundQueue.burstCapacity && queue.room.writer <= OutboundQueue.burstCapacity)
        #expect(written == 2 * burst)

        // A backlog, then frames trickling in one at a time, each while the one before is still being written, so
        // that every flush finds a frame waiting: once the backlog is over its large buffer is given back, rather
        // than passed between the senders and the writer for as long as the trickle lasts.
        try await enqueueBurst(from: 1 + 2 * burst)
        await channel.testingEventLoop.run()
        written = 0
        // A batch (up to 1 024 frames) per turn: the burst is written within 3 × 4 turns; 8 turns of trickle follow.
        for id in UInt64(1 + 3 * burst)..<UInt64(1 + 3 * burst + 20) {
            let note = Self.note(id)
            #expect(try await channel.testingEventLoop.executeInContext { try queue.enqueueIfRoom(note) })
            kernel.take()
            await channel.testingEventLoop.run()
            written += try await Self.written(channel).count
        }
        #expect(written >= burst + 8, "the backlog was written and the trickle went on after it")
        #expect(queue.room.senders <= OutboundQueue.burstCapacity && queue.room.writer <= OutboundQueue.burstCapacity)
    }

    @Test("held frames wait until release, behind what was written before")
    func holdAndRelease() async throws {
        let (channel, queue, _) = try await Self.queue(high: 1 << 24, low: 1 << 20, holding: false)
        queue.hold()
        #expect(try queue.enqueueIfRoom(Self.note(2)))
        await channel.testingEventLoop.run()
        #expect(try await Self.written(channel).isEmpty)
        try await channel.writeAndFlush(FrameBatch([Self.note(1)]))  // the handshake's last frame, written directly
        queue.release()
        await channel.testingEventLoop.run()
        #expect(try await Self.written(channel) == [Self.note(1), Self.note(2)])
    }

    @Test("above the high watermark a sender waits, and is let go only once the queue drained below the low one")
    func backpressure() async throws {
        let (channel, queue, kernel) = try await Self.queue(high: 1000, low: 300, holding: true)
        // One frame over the high watermark: taken (the queue was below it), but the next must wait.
        #expect(try queue.enqueueIfRoom(Self.note(1, bytes: 1200)))
        await channel.testingEventLoop.run()
        #expect(try queue.enqueueIfRoom(Self.note(2)) == false)
        let sent = Task { try await queue.enqueue(Self.note(3)) }
        while queue.waitingSenders == 0 { await Task.yield() }  // the sender is parked in the queue's waiters

        kernel.take()
        await channel.testingEventLoop.run()
        try await sent.value
        #expect(queue.waitingSenders == 0)
        await channel.testingEventLoop.run()
        #expect(try await Self.written(channel).map(\.bodySize).count == 2)
    }

    @Test("a sender waiting on a queue nothing leaves fails as stalled after the timeout, counted on the loop's clock")
    func stall() async throws {
        let (channel, queue, kernel) = try await Self.queue(high: 1000, low: 300, holding: true)
        #expect(try queue.enqueueIfRoom(Self.note(1, bytes: 1200)))
        await channel.testingEventLoop.run()
        let sent = Task { try await queue.enqueue(Self.note(2), stallTimeout: .seconds(5)) }
        while queue.waitingSenders == 0 { await Task.yield() }
        await channel.testingEventLoop.advanceTime(by: .milliseconds(4999))
        #expect(queue.waitingSenders == 1)
        await channel.testingEventLoop.advanceTime(by: .milliseconds(1))
        await #expect(throws: OutboundQueueStalled.self) { try await sent.value }
        #expect(kernel.heldWrites == 1)
    }

    @Test("a finished queue writes what it holds, then its last frame, then closes; a peer that never reads is closed at the timeout")
    func finish() async throws {
        let (channel, queue, _) = try await Self.queue(high: 1 << 20, low: 1 << 10, holding: false)
        #expect(try queue.enqueueIfRoom(Self.note(1)))
        queue.finish(sending: .close(CloseFrame(code: .goingAway, message: "bye")), then: .close, timeout: .seconds(5), reason: CancellationError())
        #expect(throws: CancellationError.self) { try queue.enqueueIfRoom(Self.note(2)) }
        await channel.testingEventLoop.run()
        #expect(try await Self.written(channel) == [Self.note(1), .close(CloseFrame(code: .goingAway, message: "bye"))])
        #expect(!channel.isActive)

        let (stuck, stuckQueue, _) = try await Self.queue(high: 1 << 20, low: 1 << 10, holding: true)
        #expect(try stuckQueue.enqueueIfRoom(Self.note(1)))
        stuckQueue.finish(sending: nil, then: .close, timeout: .seconds(5), reason: CancellationError())
        await stuck.testingEventLoop.advanceTime(by: .milliseconds(4999))
        #expect(stuck.isActive)
        await stuck.testingEventLoop.advanceTime(by: .milliseconds(1))
        #expect(!stuck.isActive)
    }
}
