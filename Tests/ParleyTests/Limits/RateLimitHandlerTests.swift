import Foundation
import Logging
import NIOCore
import NIOEmbedded
import NIOPosix
@testable import Parley
import ParleyTestSupport
import ParleyWire
import Synchronization
import Testing

@Suite("The message rate limit on an EmbeddedChannel")
struct RateLimitHandlerTests {
    @Test("the rate limit admits the burst, refills at the rate on the loop's clock, and ends a flood once")
    func rateLimit() throws {
        let channel = try PipelineFixtures.connected([RateLimitHandler(limit: MessageRateLimit(perSecond: 2, burst: 3))])
        try channel.writeFrames(PipelineFixtures.message(1), PipelineFixtures.message(2))
        try channel.writeFrames(PipelineFixtures.message(3))
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(500))  // one token back
        // One read over the limit: the frame within it passes, the rest is dropped, and the connection ends.
        #expect(throws: ConnectionLimitExceeded.rate(MessageRateLimit(perSecond: 2, burst: 3))) {
            try channel.writeFrames(PipelineFixtures.message(4), PipelineFixtures.message(5), PipelineFixtures.message(6))
        }
        try channel.writeFrames(PipelineFixtures.message(7))  // dropped, not reported again
        try channel.throwIfErrorCaught()
        #expect(try channel.readFrames() == (1...4).map { PipelineFixtures.message(UInt64($0)) })

        // Over the limit at a read's first frame: nothing of it passes.
        let atOnce = try PipelineFixtures.connected([RateLimitHandler(limit: MessageRateLimit(perSecond: 1, burst: 1))])
        try atOnce.writeFrames(PipelineFixtures.message(1))
        #expect(throws: ConnectionLimitExceeded.rate(MessageRateLimit(perSecond: 1, burst: 1))) {
            try atOnce.writeFrames(PipelineFixtures.message(2), PipelineFixtures.message(3))
        }
        #expect(try atOnce.readFrames() == [PipelineFixtures.message(1)])

        // A steady peer at half the rate is never refused, however long it keeps going (a minute of loop time).
        let steady = try PipelineFixtures.connected([RateLimitHandler(limit: MessageRateLimit(perSecond: 10, burst: 5))])
        for id in 1...300 {
            try steady.writeFrames(PipelineFixtures.message(UInt64(id)))
            steady.embeddedEventLoop.advanceTime(by: .milliseconds(200))
        }
        try steady.throwIfErrorCaught()
        #expect(try steady.readFrames().count == 300 && steady.isActive)
    }

    @Test("replies to this side's own requests cost no token, as many as requests were written; replies beyond them count as any frame")
    func repliesToOwnRequests() throws {
        let limit = MessageRateLimit(perSecond: 1, burst: 2)
        let channel = try PipelineFixtures.connected([RateLimitHandler(limit: limit)])
        let requests = (1...50).map { id in
            Frame.message(MessageFrame(header: MessageHeader(typeName: "test.Ask", id: MessageID(UInt64(id)), flags: .expectsReply), payload: ByteBuffer()))
        }
        try channel.writeOutbound(FrameBatch(requests))
        // Fifty answers at once (one of them an error reply) and one message of the peer's own: one token spent.
        let answers = (1...49).map { PipelineFixtures.note(UInt64(100 + $0), inReplyTo: UInt64($0)) }
            + [Frame.errorReply(ErrorReplyFrame(inReplyTo: MessageID(50), code: .handlerFailed, message: "no"))]
        try channel.writeInbound(FrameBatch(answers + [PipelineFixtures.message(1)]))
        try channel.throwIfErrorCaught()
        #expect(try channel.readFrames().count == 51)
        // Replies nobody asked for are the peer's doing: the one token left, then the limit.
        #expect(throws: ConnectionLimitExceeded.rate(limit)) {
            try channel.writeFrames(PipelineFixtures.note(200, inReplyTo: 1), PipelineFixtures.note(201, inReplyTo: 2))
        }
        #expect(try channel.readFrames().count == 1)
    }
}
