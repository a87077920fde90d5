import HTTPTypes
import NIOCore
import NIOEmbedded
import NIOHTTPTypes
import Testing

@testable import ParleyWeb

@Suite("Web connection limits")
struct WebConnectionGuardTests {
    static let stall = TimeAmount.seconds(30)

    static func channel(_ count: WebConnectionCount) throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        try channel.pipeline.syncOperations.addHandler(WebConnectionGuard(count: count, stallTimeout: stall))
        return channel
    }

    static let head = HTTPRequestPart.head(HTTPRequest(method: .post, scheme: nil, authority: "127.0.0.1", path: "/api/import"))

    @Test("past the cap a connection is closed at once; one that closes makes room")
    func cap() throws {
        let count = WebConnectionCount(limit: 2)
        let first = try Self.channel(count)
        let second = try Self.channel(count)
        let third = try Self.channel(count)
        #expect(first.isActive && second.isActive && !third.isActive)
        #expect(count.current == 2 && count.refusedTotal == 1)
        _ = try first.finish()
        #expect(count.current == 1)
        let fourth = try Self.channel(count)
        #expect(fourth.isActive && count.current == 2)
        _ = try? second.finish()
        _ = try? fourth.finish()
        #expect(count.current == 0)
    }

    @Test("a request body that stops arriving is closed after the stall timeout; one that keeps coming or ends is not")
    func stalledBody() throws {
        let count = WebConnectionCount(limit: 8)
        let channel = try Self.channel(count)
        try channel.writeInbound(Self.head)
        channel.embeddedEventLoop.advanceTime(by: Self.stall - .seconds(1))
        try channel.writeInbound(HTTPRequestPart.body(ByteBuffer(string: "a")))
        channel.embeddedEventLoop.advanceTime(by: Self.stall - .seconds(1))
        #expect(channel.isActive, "closed although the body kept coming")
        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        #expect(!channel.isActive)
        _ = try? channel.readInbound(as: HTTPRequestPart.self)

        let whole = try Self.channel(count)
        try whole.writeInbound(Self.head)
        try whole.writeInbound(HTTPRequestPart.end(nil))
        whole.embeddedEventLoop.advanceTime(by: Self.stall * 2)
        #expect(whole.isActive, "a whole request was closed (the response may take its time)")
        _ = try whole.finish(acceptAlreadyClosed: true)
    }

    @Test("a connection that takes nothing written for the stall timeout is closed; one that drains in time is not")
    func stalledReader() throws {
        let count = WebConnectionCount(limit: 8)
        let channel = try Self.channel(count)
        channel.isWritable = false
        channel.pipeline.fireChannelWritabilityChanged()
        channel.embeddedEventLoop.advanceTime(by: Self.stall - .seconds(1))
        channel.isWritable = true
        channel.pipeline.fireChannelWritabilityChanged()
        channel.embeddedEventLoop.advanceTime(by: Self.stall)
        #expect(channel.isActive, "closed although it drained in time")
        channel.isWritable = false
        channel.pipeline.fireChannelWritabilityChanged()
        channel.embeddedEventLoop.advanceTime(by: Self.stall)
        #expect(!channel.isActive)
        #expect(count.current == 0)
    }
}
