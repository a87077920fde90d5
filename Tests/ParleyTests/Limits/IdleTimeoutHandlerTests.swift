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

@Suite("The idle timeout on an EmbeddedChannel")
struct IdleTimeoutHandlerTests {
    @Test("the idle timeout counts messages either way, not pings, and exempts nobody on TCP")
    func idle() throws {
        let channel = try PipelineFixtures.connected([IdleTimeoutHandler(timeout: .seconds(10))])
        channel.embeddedEventLoop.advanceTime(by: .seconds(6))
        try channel.writeOutbound(FrameBatch([Frame.ping(2), PipelineFixtures.message(1)]))  // a message we send counts
        channel.embeddedEventLoop.advanceTime(by: .seconds(6))
        try channel.writeFrames(Frame.ping(1))  // a ping does not
        channel.embeddedEventLoop.advanceTime(by: .seconds(3))
        try channel.throwIfErrorCaught()
        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        #expect(throws: ConnectionLimitExceeded.idle(timeout: .seconds(10))) { try channel.throwIfErrorCaught() }

        // A message received counts from the read it came in, and one written but not yet flushed does not.
        let reading = try PipelineFixtures.connected([IdleTimeoutHandler(timeout: .seconds(10))])
        reading.embeddedEventLoop.advanceTime(by: .seconds(6))
        try reading.writeFrames(Frame.pong(1), PipelineFixtures.message(2))
        reading.embeddedEventLoop.advanceTime(by: .seconds(6))
        reading.write(FrameBatch([PipelineFixtures.message(3)]), promise: nil)
        reading.embeddedEventLoop.advanceTime(by: .seconds(3))
        try reading.throwIfErrorCaught()
        reading.embeddedEventLoop.advanceTime(by: .seconds(1))
        #expect(throws: ConnectionLimitExceeded.idle(timeout: .seconds(10))) { try reading.throwIfErrorCaught() }
    }
}
