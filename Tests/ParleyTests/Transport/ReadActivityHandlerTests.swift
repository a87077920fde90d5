import NIOCore
import NIOEmbedded
@testable import Parley
import ParleyWire
import Synchronization
import Testing

@Suite("Read activity on an EmbeddedChannel")
struct ReadActivityHandlerTests {
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
}
