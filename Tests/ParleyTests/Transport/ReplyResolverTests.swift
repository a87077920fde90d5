import NIOCore
import NIOEmbedded
@testable import Parley
import ParleyWire
import Synchronization
import Testing

/// The reply path on a testing channel: no sockets, time moved by hand.
@Suite("The reply resolver on testing channels")
struct ReplyResolverTests {
    static let alice = PeerID()

    /// A reply resolver in `channel`'s pipeline for a connection whose handshake is done (Alice the peer) or not.
    /// Call on the channel's loop.
    static func resolving(handshakeDone: Bool, on channel: any Channel) throws -> (PeerConnection, PendingRequests, StatisticsCounters) {
        let requests = PendingRequests()
        let counters = StatisticsCounters()
        let connection = PeerConnection(
            channel: channel, role: .dialer, authentication: .none, requests: requests,
            configuration: TransceiverConfiguration(name: "test")
        )
        if handshakeDone {
            connection.peer = Peer(id: alice, name: "alice", address: "10.0.0.2:7206", protocolVersion: 1, accepts: [])
        }
        try channel.pipeline.syncOperations.addHandler(ReplyResolver(connection: connection, counters: counters))
        return (connection, requests, counters)
    }

    /// A testing channel with a reply resolver, the handshake done: for the tests that await a reply (an
    /// EmbeddedChannel may only be used on the thread that made it, and an await may resume on another).
    static func resolvingAsync() async throws -> (NIOAsyncTestingChannel, PendingRequests, StatisticsCounters) {
        let channel = NIOAsyncTestingChannel()
        let (_, requests, counters) = try await channel.testingEventLoop.executeInContext {
            try Self.resolving(handshakeDone: true, on: channel)
        }
        return (channel, requests, counters)
    }

    @Test("a reply completes its request on the loop and goes no further; other messages pass on in order")
    func repliesResolve() async throws {
        let (channel, requests, counters) = try await Self.resolvingAsync()
        let slot = requests.register(MessageID(7), to: Self.alice, deadline: .distantFuture, timerOn: channel.eventLoop)
        let failed = requests.register(MessageID(8), to: Self.alice, deadline: .distantFuture, timerOn: channel.eventLoop)
        try await channel.writeFrames(PipelineFixtures.note(1))
        try await channel.writeFrames(PipelineFixtures.note(2, inReplyTo: 7))
        try await channel.writeFrames(Frame.errorReply(ErrorReplyFrame(inReplyTo: MessageID(8), code: .handlerFailed, message: "no")))
        try await channel.writeFrames(PipelineFixtures.note(3))

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
        #expect(try await channel.readInbound(as: QueuedFrames.self) == QueuedFrames(frames: [PipelineFixtures.note(1)]))
        #expect(try await channel.readInbound(as: QueuedFrames.self) == QueuedFrames(frames: [PipelineFixtures.note(3)]))
        #expect(try await channel.readInbound(as: QueuedFrames.self) == nil)
        #expect(counters.messagesReceived.load(ordering: .relaxed) == 1)
        #expect(counters.lateReplies.load(ordering: .relaxed) == 0)
    }

    @Test("the frames of one read reach the handlers' queue together when the read completes, replies taken out; an error or the end of input comes after them")
    func batchesPerRead() async throws {
        let (channel, requests, _) = try await Self.resolvingAsync()
        let slot = requests.register(MessageID(7), to: Self.alice, deadline: .distantFuture, timerOn: channel.eventLoop)
        // Two batches from one socket read (the decoder passes on one per chunk of bytes it is given).
        try await channel.testingEventLoop.executeInContext {
            let pipeline = channel.pipeline.syncOperations
            pipeline.fireChannelRead(NIOAny(FrameBatch([PipelineFixtures.note(1), PipelineFixtures.note(2, inReplyTo: 7)])))
            pipeline.fireChannelRead(NIOAny(FrameBatch([PipelineFixtures.note(3)])))
        }
        #expect(try await channel.readInbound(as: QueuedFrames.self) == nil, "nothing passes on before the read completes")
        try await channel.testingEventLoop.executeInContext { channel.pipeline.syncOperations.fireChannelReadComplete() }
        #expect(try await channel.readInbound(as: QueuedFrames.self) == QueuedFrames(frames: [PipelineFixtures.note(1), PipelineFixtures.note(3)]))
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
        let events = try await channel.testingEventLoop.executeInContext {
            let order = Order()
            let pipeline = channel.pipeline.syncOperations
            try pipeline.addHandler(order)
            pipeline.fireChannelRead(NIOAny(FrameBatch([PipelineFixtures.note(4)])))
            pipeline.fireErrorCaught(WireError.frameTooLarge(length: 1, maximum: 0))
            pipeline.fireChannelRead(NIOAny(FrameBatch([PipelineFixtures.note(5)])))
            pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
            pipeline.fireChannelRead(NIOAny(FrameBatch([PipelineFixtures.note(6)])))
            pipeline.fireChannelInactive()
            return order.events
        }
        #expect(events == ["batch of 1", "error", "batch of 1", "input closed", "batch of 1", "inactive"])
    }

    @Test("a reply nobody waits for is counted as late and dropped; before the handshake everything passes on")
    func lateAndEarly() throws {
        let channel = EmbeddedChannel()
        let (_, _, counters) = try Self.resolving(handshakeDone: true, on: channel)
        try channel.writeFrames(PipelineFixtures.note(2, inReplyTo: 99), Frame.errorReply(ErrorReplyFrame(inReplyTo: MessageID(98), code: .handlerFailed, message: "late")))
        #expect(try channel.readInbound(as: QueuedFrames.self) == nil)
        #expect(counters.lateReplies.load(ordering: .relaxed) == 2)

        let early = EmbeddedChannel()
        let (_, requests, earlyCounters) = try Self.resolving(handshakeDone: false, on: early)
        _ = requests.register(MessageID(7), to: Self.alice, deadline: .distantFuture, timerOn: early.eventLoop)
        try early.writeFrames(PipelineFixtures.note(2, inReplyTo: 7))
        #expect(try early.readInbound(as: QueuedFrames.self) == QueuedFrames(frames: [PipelineFixtures.note(2, inReplyTo: 7)]), "the handshake decides what an early frame is")
        #expect(earlyCounters.lateReplies.load(ordering: .relaxed) == 0)
    }
}
