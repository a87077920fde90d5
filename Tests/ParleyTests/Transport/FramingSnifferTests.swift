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

@Suite("The framing sniffer on an EmbeddedChannel")
struct FramingSnifferTests {
    final class Chosen: Sendable {
        let framings = Mutex<[Framing]>([])
        func withLockedValue<T>(_ body: ([Framing]) -> T) -> T { framings.withLock { body($0) } }
    }

    /// A channel whose sniffer installs the framing it is told to and records which one that was.
    static func sniffing(refuse: (any Error)? = nil) throws -> (EmbeddedChannel, Chosen) {
        let chosen = Chosen()
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(
            FramingSniffer { framing, context in
                chosen.framings.withLock { $0.append(framing) }
                if let refuse { throw refuse }
                let handler: any ChannelHandler =
                    framing == .parley
                    ? FrameBatchDecoder() : ByteToMessageHandler(OriginalFrameDecoder())
                try context.pipeline.syncOperations.addHandler(handler, position: .after(context.handler))
            }
        )
        return (channel, chosen)
    }

    @Test("the sniffer installs the framing the first byte names, hands it every byte, and leaves the pipeline")
    func sniffer() throws {
        let (parley, parleyChosen) = try Self.sniffing()
        var hello = ByteBuffer()
        rawHello().write(to: &hello)
        // The first read holds one byte only: the rest of the frame still reaches the installed decoder.
        try parley.writeInbound(hello.readSlice(length: 1)!)
        try parley.writeInbound(hello)
        #expect(parleyChosen.withLockedValue { $0 } == [Framing.parley])
        guard case .hello? = try parley.readFrames().first else {
            Issue.record("the hello did not come through")
            return
        }
        #expect(throws: (any Error).self) { try parley.pipeline.syncOperations.handler(type: FramingSniffer.self) }

        let (original, originalChosen) = try Self.sniffing()
        try original.writeInbound(PipelineFixtures.originalFrame(#"{"a":1}"#))
        #expect(originalChosen.withLockedValue { $0 } == [Framing.original])
        #expect(try original.readInbound(as: ByteBuffer.self) == ByteBuffer(string: #"{"a":1}"#))
    }

    @Test("a refused framing raises its error once; later bytes and any frame written before a framing are dropped")
    func snifferRefuses() throws {
        let (channel, chosen) = try Self.sniffing(refuse: HandshakeError.originalFramingNeedsSecret)
        // Nothing can be said before the framing is known: a goodbye written now is dropped, not sent as a Frame.
        try channel.writeOutbound(FrameBatch([Frame.close(CloseFrame(code: .goingAway, message: "bye"))]))
        #expect(try channel.readOutbound(as: ByteBuffer.self) == nil)
        #expect(throws: HandshakeError.originalFramingNeedsSecret) { try channel.writeInbound(PipelineFixtures.originalFrame("{}")) }
        try channel.writeInbound(PipelineFixtures.originalFrame("{}"))
        #expect(try channel.readInbound(as: ByteBuffer.self) == nil)
        #expect(chosen.withLockedValue { $0 } == [Framing.original])
    }
}
