import Logging
import NIOCore
import NIOEmbedded
@testable import Parley
import ParleyTestSupport
import ParleyWire
import Testing

/// The memory budget and its handlers on EmbeddedChannels: which connection is closed when it fills, that a
/// frame's bytes are held only while it arrives, and the stall timeout on the loop's clock.
@Suite("Memory budget without sockets")
struct MemoryBudgetTests {
    static func budget(_ capacity: Int) -> (MemoryBudget, StatisticsCounters) {
        let counters = StatisticsCounters()
        let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        // Its timers on a real loop: the concurrent test charges from many threads, and nothing is logged anyway.
        let throttle = LogThrottle()
        return (MemoryBudget(capacity: capacity, logger: logger, logThrottle: throttle, counters: counters), counters)
    }

    static func connected() throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.connect(to: SocketAddress(ipAddress: "10.0.0.2", port: 7206)).wait()
        return channel
    }

    static func evicted(_ channel: EmbeddedChannel) -> ConnectionLimitExceeded? {
        do {
            try channel.throwIfErrorCaught()
            return nil
        } catch {
            return error as? ConnectionLimitExceeded
        }
    }

    @Test("a charge over the budget closes the connections holding the most — never a small holder — and may close the charging one")
    func eviction() throws {
        let (budget, counters) = Self.budget(1000)
        let (large, medium, small) = (try Self.connected(), try Self.connected(), try Self.connected())
        let (a, b, c) = (budget.openAccount(for: large), budget.openAccount(for: medium), budget.openAccount(for: small))
        #expect(budget.charge(600, to: a) && budget.charge(300, to: b) && budget.charge(50, to: c))
        #expect(budget.used == 950)

        // The small one asks for more: the largest holder goes, the small one gets its bytes.
        #expect(budget.charge(200, to: c))
        #expect(Self.evicted(large) == .memoryBudget(held: 600, capacity: 1000))
        #expect(Self.evicted(medium) == nil && Self.evicted(small) == nil)
        #expect(budget.used == 550)
        #expect(!budget.charge(1, to: a), "a closed account holds nothing more")

        // The charging connection is itself the largest once charged: it is the one closed, and holds nothing.
        #expect(!budget.charge(900, to: b))
        #expect(Self.evicted(medium) == .memoryBudget(held: 1200, capacity: 1000))
        #expect(budget.used == 250 && Self.evicted(small) == nil)
        #expect(counters.budgetEvictions.load(ordering: .relaxed) == 2)

        // What a connection holds comes back when it closes; releases never go below zero.
        budget.release(10_000, from: c)
        #expect(budget.used == 0)
        #expect(budget.charge(100, to: c))
        try small.close().wait()
        small.embeddedEventLoop.run()
        #expect(budget.used == 0)
    }

    @Test("charges and releases from many threads at once, some over the capacity: the budget ends equal to what its open accounts hold, within capacity, each account holding what its owner was told it holds")
    func concurrentCharges() async throws {
        let capacity = 100_000
        let (budget, counters) = Self.budget(capacity)
        // Eight owners, each keeping up to 40 000 bytes: together more than the capacity, so owners are closed
        // while others charge; a closed owner opens a new account and goes on.
        let survivors = await withTaskGroup(of: (BudgetAccount, Int).self) { group in
            for _ in 0..<8 {
                group.addTask {
                    var generator = SystemRandomNumberGenerator()
                    func open() -> BudgetAccount {
                        // Thread-safe channels: the owners run on threads of their own, and evict each other.
                        let account = budget.openAccount(for: NIOAsyncTestingChannel())
                        account.ending = { _ in }
                        return account
                    }
                    var account = open()
                    var held = 0
                    for _ in 0..<50_000 {
                        if held > 40_000 {
                            let bytes = Int.random(in: 1...held, using: &generator)
                            budget.release(bytes, from: account)
                            held -= bytes
                            continue
                        }
                        let bytes = Int.random(in: 1...3_000, using: &generator)
                        if budget.charge(bytes, to: account) {
                            held += bytes
                        } else {
                            #expect(!account.isOpen)
                            account = open()
                            held = 0
                        }
                    }
                    return (account, held)
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(counters.budgetEvictions.load(ordering: .relaxed) > 0, "the owners together went over the capacity")
        let open = survivors.filter { $0.0.isOpen }
        for (account, held) in open { #expect(account.held == held) }
        #expect(budget.used == open.reduce(0) { $0 + $1.1 })
        #expect(budget.used <= capacity)
    }

    static func pipeline(_ budget: MemoryBudget, stall: TimeAmount?) throws -> EmbeddedChannel {
        try queuedPipeline(budget, stall: stall, queued: false).channel
    }

    /// As ChannelSetup builds it: the read activity the stall timer watches is noted right after the charge; with
    /// `queued`, the reply resolver charges large frames again as they leave for their handler (the channel's
    /// inbound buffer here).
    static func queuedPipeline(_ budget: MemoryBudget, stall: TimeAmount?, queued: Bool = true) throws -> (channel: EmbeddedChannel, tap: BudgetTap) {
        let channel = try Self.connected()
        let tap = BudgetTap(budget: budget, channel: channel)
        let activity = ReadActivity()
        try channel.pipeline.syncOperations.addHandlers([
            InboundBudgetHandler(tap: tap, activity: activity, stallTimeout: stall),
            ReadActivityHandler(activity),
            FrameBatchDecoder(),
            DecodedBudgetHandler(tap: tap),
        ])
        if queued {
            let connection = PeerConnection(
                channel: channel, role: .acceptor, authentication: .none, requests: PendingRequests(),
                configuration: TransceiverConfiguration(name: "test"), budget: tap
            )
            try channel.pipeline.syncOperations.addHandler(ReplyResolver(connection: connection, counters: StatisticsCounters()))
        }
        return (channel, tap)
    }

    @Test("a read's frames waiting for their handler stay charged until handled when they reach 4 KiB; fewer bytes are bounded by count instead")
    func queuedFrames() throws {
        let (budget, _) = Self.budget(1 << 20)
        let (channel, tap) = try Self.queuedPipeline(budget, stall: nil)
        let large = Self.frame(100_000)
        let size = large.readableBytes
        try channel.writeInbound(large)
        #expect(budget.used == size, "complete, waiting for its handler: still held")
        let waiting = try #require(try channel.readInbound(as: QueuedFrames.self))
        #expect(waiting.charged == size)
        tap.release(waiting.charged)
        #expect(budget.used == 0)

        // Small frames of one read add up: 40 × 130 bytes is charged as one batch.
        var many = ByteBuffer()
        for _ in 0..<40 { many.writeImmutableBuffer(Self.frame(100)) }
        try channel.writeInbound(many)
        let batch = try #require(try channel.readInbound(as: QueuedFrames.self))
        #expect(batch.frames.count == 40)
        #expect(batch.charged == many.readableBytes && budget.used == many.readableBytes)
        tap.release(batch.charged)

        try channel.writeInbound(Self.frame(100))
        #expect(budget.used == 0)
        #expect(try #require(try channel.readInbound(as: QueuedFrames.self)).charged == 0)
        #expect(budget.used == 0)
    }

    @Test("the reader hands out a batch's frames one at a time and returns its charge only when the frame after its last is asked for")
    func readerReturnsCharge() async throws {
        let (budget, _) = Self.budget(1 << 20)
        let channel = NIOAsyncTestingChannel()
        try await channel.connect(to: SocketAddress(ipAddress: "10.0.0.2", port: 7206))
        let inbox = FrameInbox(eventLoop: channel.eventLoop)
        try await channel.pipeline.addHandler(inbox)
        let tap = try await channel.testingEventLoop.executeInContext { BudgetTap(budget: budget, channel: channel) }
        let frames = (1...3).map { Frame.message(MessageFrame(header: MessageHeader(typeName: "t", id: MessageID($0)), payload: ByteBuffer())) }
        #expect(budget.charge(5_000, to: tap.account))
        try await channel.writeInbound(QueuedFrames(frames: Array(frames[0...1]), charged: 5_000))
        try await channel.writeInbound(QueuedFrames(frames: []))
        try await channel.writeInbound(QueuedFrames(frames: [frames[2]]))

        var reader = FrameReader(inbox, budget: tap)
        #expect(try await reader.next() == frames[0])
        #expect(try await reader.next() == frames[1])
        #expect(budget.used == 5_000, "the last frame of the batch is still being handled")
        #expect(try await reader.next() == frames[2], "an empty batch is skipped")
        #expect(budget.used == 0)
        try await channel.close()
        #expect(try await reader.next() == nil)
    }

    @Test("frames a busy handler has not taken count against the budget: when it fills, their connection is closed")
    func queuedFramesOverBudget() throws {
        let (budget, _) = Self.budget(250_000)
        let (busy, _) = try Self.queuedPipeline(budget, stall: nil)
        let (other, _) = try Self.queuedPipeline(budget, stall: nil)
        try busy.writeInbound(Self.frame(100_000))
        try busy.writeInbound(Self.frame(100_000))
        try other.writeInbound(Self.frame(1_000).getSlice(at: 0, length: 500)!)
        #expect(budget.used > 200_000)
        // Another 100 000 bytes would not fit: the connection whose handler is behind holds the most.
        #expect(throws: ConnectionLimitExceeded.self) { try busy.writeInbound(Self.frame(100_000)) }
        #expect(Self.evicted(other) == nil)
        #expect(budget.used == 500)
    }

    static func frame(_ bytes: Int) -> ByteBuffer {
        var buffer = ByteBuffer()
        Frame.message(MessageFrame(header: MessageHeader(typeName: "test.Big", id: MessageID(1)), payload: ByteBuffer(repeating: 0x41, count: bytes)))
            .write(to: &buffer)
        return buffer
    }

    @Test("a frame is charged as its bytes arrive and returned once decoded; a frame that stops arriving closes at the stall timeout")
    func inboundAndStall() throws {
        let (budget, _) = Self.budget(1 << 20)
        let channel = try Self.pipeline(budget, stall: .seconds(10))
        var whole = Self.frame(100_000)
        let size = whole.readableBytes
        try channel.writeInbound(whole.readSlice(length: 40_000)!)
        #expect(budget.used == 40_000, "charged as read, not as announced")
        channel.embeddedEventLoop.advanceTime(by: .seconds(9))
        try channel.writeInbound(whole.readSlice(length: 30_000)!)  // progress: the stall clock starts again
        channel.embeddedEventLoop.advanceTime(by: .seconds(9))
        #expect(Self.evicted(channel) == nil)
        try channel.writeInbound(whole)
        #expect(budget.used == 0)
        #expect(try channel.readInbound(as: FrameBatch.self)?.frames.map(\.wireSize) == [size])

        // Complete frames, then silence: nothing is held, nothing stalls.
        channel.embeddedEventLoop.advanceTime(by: .seconds(60))
        #expect(Self.evicted(channel) == nil)

        // Half a frame, then nothing for the timeout.
        try channel.writeInbound(Self.frame(5_000).getSlice(at: 0, length: 100)!)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(9_999))
        #expect(Self.evicted(channel) == nil)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        #expect(Self.evicted(channel) == .stalledFrame(timeout: .seconds(10)))
    }

    @Test("bytes beyond the budget are not held: the connection is closed and what it sent is dropped")
    func inboundOverBudget() throws {
        let (budget, _) = Self.budget(64 * 1024)
        let small = try Self.pipeline(budget, stall: nil)
        let large = try Self.pipeline(budget, stall: nil)
        try small.writeInbound(Self.frame(1_000).getSlice(at: 0, length: 500)!)
        try large.writeInbound(Self.frame(100_000).getSlice(at: 0, length: 60_000)!)
        #expect(throws: ConnectionLimitExceeded.memoryBudget(held: 70_000, capacity: 64 * 1024)) {
            try large.writeInbound(Self.frame(100_000).getSlice(at: 60_000, length: 10_000)!)
        }
        #expect(Self.evicted(small) == nil)
        #expect(budget.used == 500)
    }

    @Test("queued messages are charged to the budget and returned as the kernel takes them")
    func outboundQueue() async throws {
        let (budget, _) = Self.budget(1 << 20)
        let channel = NIOAsyncTestingChannel()
        try await channel.connect(to: SocketAddress(ipAddress: "10.0.0.2", port: 7206))
        let tap = try await channel.testingEventLoop.executeInContext { BudgetTap(budget: budget, channel: channel) }
        let queue = OutboundQueue(channel: channel, highWatermark: 1 << 20, lowWatermark: 1 << 10, budget: tap)
        let note = Frame.message(MessageFrame(header: MessageHeader(typeName: "t", id: MessageID(1)), payload: ByteBuffer(repeating: 1, count: 1000)))
        // Within one turn of the loop: queued, charged, not yet written.
        let charged = try await channel.testingEventLoop.executeInContext {
            _ = try queue.enqueueIfRoom(note)
            return budget.used
        }
        #expect(charged == note.wireSize)
        await channel.testingEventLoop.run()
        #expect(budget.used == 0)

        // A message the budget cannot hold is not queued: the sender gets the limit, and the connection is closed.
        let (small, _) = Self.budget(512)
        let full = NIOAsyncTestingChannel()
        try await full.connect(to: SocketAddress(ipAddress: "10.0.0.3", port: 7206))
        let fullTap = try await full.testingEventLoop.executeInContext { BudgetTap(budget: small, channel: full) }
        let refusing = OutboundQueue(channel: full, highWatermark: 1 << 20, lowWatermark: 1 << 10, budget: fullTap)
        #expect(throws: ConnectionLimitExceeded.self) { try refusing.enqueueIfRoom(note) }
        #expect(small.used == 0 && refusing.queuedBytes == 0)
    }
}
