import NIOCore
import NIOEmbedded
@testable import Parley
import ParleyWire
import Synchronization
import Testing

/// The outbound queue on a testing channel: a "socket" that takes writes only when told stands in for a peer that
/// stopped reading; time moved by hand.
@Suite("The outbound queue on a testing channel")
struct OutboundQueueTests {
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
            try (1...5).map { try queue.enqueueIfRoom(PipelineFixtures.note(UInt64($0))) }
        }
        #expect(taken.allSatisfy { $0 })
        await channel.testingEventLoop.run()
        let first = try await Self.writes(channel)
        #expect(first.frames == (1...5).map { PipelineFixtures.note(UInt64($0)) })
        #expect(first.writes == 1 && kernel.flushes - flushesBefore == 1, "one write of the batch, one flush")

        // Three 40 KiB frames: no two fit in one 64 KiB batch, so three flushes, each after the last was taken.
        _ = try await channel.testingEventLoop.executeInContext {
            try (6...8).map { try queue.enqueueIfRoom(PipelineFixtures.note(UInt64($0), bytes: 40 * 1024)) }
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
                try (first..<first + burst).map { try queue.enqueueIfRoom(PipelineFixtures.note(UInt64($0))) }
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
            let note = PipelineFixtures.note(id)
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
        #expect(try queue.enqueueIfRoom(PipelineFixtures.note(2)))
        await channel.testingEventLoop.run()
        #expect(try await Self.written(channel).isEmpty)
        try await channel.writeAndFlush(FrameBatch([PipelineFixtures.note(1)]))  // the handshake's last frame, written directly
        queue.release()
        await channel.testingEventLoop.run()
        #expect(try await Self.written(channel) == [PipelineFixtures.note(1), PipelineFixtures.note(2)])
    }

    @Test("above the high watermark a sender waits, and is let go only once the queue drained below the low one")
    func backpressure() async throws {
        let (channel, queue, kernel) = try await Self.queue(high: 1000, low: 300, holding: true)
        // One frame over the high watermark: taken (the queue was below it), but the next must wait.
        #expect(try queue.enqueueIfRoom(PipelineFixtures.note(1, bytes: 1200)))
        await channel.testingEventLoop.run()
        #expect(try queue.enqueueIfRoom(PipelineFixtures.note(2)) == false)
        let sent = Task { try await queue.enqueue(PipelineFixtures.note(3)) }
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
        #expect(try queue.enqueueIfRoom(PipelineFixtures.note(1, bytes: 1200)))
        await channel.testingEventLoop.run()
        let sent = Task { try await queue.enqueue(PipelineFixtures.note(2), stallTimeout: .seconds(5)) }
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
        #expect(try queue.enqueueIfRoom(PipelineFixtures.note(1)))
        queue.finish(sending: .close(CloseFrame(code: .goingAway, message: "bye")), then: .close, timeout: .seconds(5), reason: CancellationError())
        #expect(throws: CancellationError.self) { try queue.enqueueIfRoom(PipelineFixtures.note(2)) }
        await channel.testingEventLoop.run()
        #expect(try await Self.written(channel) == [PipelineFixtures.note(1), .close(CloseFrame(code: .goingAway, message: "bye"))])
        #expect(!channel.isActive)

        let (stuck, stuckQueue, _) = try await Self.queue(high: 1 << 20, low: 1 << 10, holding: true)
        #expect(try stuckQueue.enqueueIfRoom(PipelineFixtures.note(1)))
        stuckQueue.finish(sending: nil, then: .close, timeout: .seconds(5), reason: CancellationError())
        await stuck.testingEventLoop.advanceTime(by: .milliseconds(4999))
        #expect(stuck.isActive)
        await stuck.testingEventLoop.advanceTime(by: .milliseconds(1))
        #expect(!stuck.isActive)
    }
}
