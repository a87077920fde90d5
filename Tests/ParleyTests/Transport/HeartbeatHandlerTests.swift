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

@Suite("Heartbeats and probes on an EmbeddedChannel")
struct HeartbeatHandlerTests {
    /// A connected channel with the read activity, the frame decoder and heartbeats at `interval`/`timeout`, started
    /// as after a handshake.
    static func heartbeating(interval: TimeAmount, timeout: TimeAmount) throws -> (EmbeddedChannel, PeerConnection) {
        let channel = EmbeddedChannel()
        let activity = ReadActivity()
        let connection = PeerConnection(
            channel: channel, role: .dialer, authentication: .none, requests: PendingRequests(),
            configuration: TransceiverConfiguration(name: "test")
        )
        try channel.pipeline.syncOperations.addHandlers([
            ReadActivityHandler(activity),
            FrameBatchDecoder(),
            HeartbeatHandler(interval: interval, timeout: timeout, activity: activity, connection: connection),
        ])
        try channel.connect(to: SocketAddress(ipAddress: "10.0.0.2", port: 7206)).wait()
        channel.pipeline.triggerUserOutboundEvent(HeartbeatHandler.Start(), promise: nil)
        return (channel, connection)
    }

    @Test("heartbeats: a ping every interval, pings answered, and silence past the timeout closes — any read resets it")
    func heartbeat() throws {
        let (channel, connection) = try Self.heartbeating(interval: .seconds(1), timeout: .seconds(3))
        func bytes(_ frame: Frame) -> ByteBuffer {
            var buffer = ByteBuffer()
            frame.write(to: &buffer)
            return buffer
        }
        /// What a socket channel with auto-read does after each read; an EmbeddedChannel does not. Without it the
        /// handler sees reading paused (our own backpressure) and, rightly, does not blame the peer.
        func readOn() { channel.pipeline.read() }

        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        #expect(try channel.readOutbound(as: FrameBatch.self) == FrameBatch([.ping(1)]))
        try channel.writeInbound(bytes(.ping(77)))
        readOn()
        #expect(try channel.readOutbound(as: FrameBatch.self) == FrameBatch([.pong(77)]))
        #expect(try channel.readFrames() == [], "a ping after the handshake is the heartbeat's own")
        // In one read with messages: the pings are answered (one flush), the messages pass on in order.
        var mixed = ByteBuffer()
        for frame in [PipelineFixtures.message(1), .ping(78), .pong(1), PipelineFixtures.message(2), .ping(79)] { frame.write(to: &mixed) }
        try channel.writeInbound(mixed)
        #expect(try channel.readOutbound(as: FrameBatch.self) == FrameBatch([.pong(78), .pong(79)]), "one write for the read's pings")
        #expect(try channel.readFrames() == [PipelineFixtures.message(1), PipelineFixtures.message(2)])

        // Bytes at 2.5 s move the deadline to 5.5 s: any read is life, even half a frame.
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1500))
        try channel.writeInbound(bytes(PipelineFixtures.message(1)).getSlice(at: 0, length: 3)!)
        readOn()
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(2999))
        #expect(channel.isActive)
        try channel.throwIfErrorCaught()
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        #expect(!channel.isActive)
        #expect(connection.endReason == .silent(.seconds(3)), "\(String(describing: connection.endReason))")
    }

    @Test("sending nonstop to a peer that only answers pings keeps it; one that does not answer is closed although we send")
    func heartbeatWhileSending() throws {
        for answers in [true, false] {
            let (channel, connection) = try Self.heartbeating(interval: .milliseconds(500), timeout: .milliseconds(2500))
            var pings = 0
            // Five seconds, twice the timeout, of a message every 5 ms from our side.
            for step in 1...1000 where channel.isActive {
                try channel.writeOutbound(FrameBatch([PipelineFixtures.message(UInt64(step))]))
                channel.embeddedEventLoop.advanceTime(by: .milliseconds(5))
                while let frame = try channel.readOutbound(as: FrameBatch.self)?.frames.first {
                    guard case .ping(let nonce) = frame else { continue }
                    pings += 1
                    if answers {
                        var pong = ByteBuffer()
                        Frame.pong(nonce).write(to: &pong)
                        try channel.writeInbound(pong)
                        channel.pipeline.read()
                    }
                }
            }
            if answers {
                #expect(channel.isActive, "\(String(describing: connection.endReason))")
                #expect(pings == 10, "a ping every interval although we were sending all the time")
            } else {
                #expect(!channel.isActive)
                #expect(connection.endReason == .silent(.milliseconds(2500)), "\(String(describing: connection.endReason))")
            }
        }
    }

    @Test("while we ourselves have stopped reading (backpressure), silence is not the peer's fault")
    func heartbeatPaused() throws {
        let channel = EmbeddedChannel()
        let activity = ReadActivity()
        let connection = PeerConnection(
            channel: channel, role: .dialer, authentication: .none, requests: PendingRequests(),
            configuration: TransceiverConfiguration(name: "test")
        )
        try channel.pipeline.syncOperations.addHandler(
            HeartbeatHandler(interval: .seconds(1), timeout: .seconds(3), activity: activity, connection: connection)
        )
        try channel.connect(to: SocketAddress(ipAddress: "10.0.0.2", port: 7206)).wait()
        channel.pipeline.triggerUserOutboundEvent(HeartbeatHandler.Start(), promise: nil)
        channel.pipeline.fireChannelReadComplete()  // a read completed, and no new read was asked for
        channel.embeddedEventLoop.advanceTime(by: .seconds(30))
        #expect(channel.isActive && connection.endReason == nil)
    }

    @Test("a probe pings at once and closes a connection that answers nothing within its window; any answer keeps it")
    func probe() throws {
        func bytes(_ frame: Frame) -> ByteBuffer {
            var buffer = ByteBuffer()
            frame.write(to: &buffer)
            return buffer
        }
        // Live: the pong comes back within the window.
        let (live, liveConnection) = try Self.heartbeating(interval: .seconds(1), timeout: .seconds(30))
        live.pipeline.read()
        live.pipeline.triggerUserOutboundEvent(HeartbeatHandler.Probe(within: .seconds(1)), promise: nil)
        #expect(try live.readOutbound(as: FrameBatch.self) == FrameBatch([.ping(1)]))
        live.embeddedEventLoop.advanceTime(by: .milliseconds(300))
        try live.writeInbound(bytes(.pong(1)))
        live.pipeline.read()
        live.embeddedEventLoop.advanceTime(by: .seconds(2))
        #expect(live.isActive && liveConnection.endReason == nil)

        // Dead: nothing within the window, long before the 30 s heartbeat timeout.
        let (dead, deadConnection) = try Self.heartbeating(interval: .seconds(1), timeout: .seconds(30))
        dead.pipeline.read()
        dead.embeddedEventLoop.advanceTime(by: .milliseconds(100))  // the last read was before the probe
        dead.pipeline.triggerUserOutboundEvent(HeartbeatHandler.Probe(within: .seconds(1)), promise: nil)
        #expect(try dead.readOutbound(as: FrameBatch.self) == FrameBatch([.ping(1)]))
        dead.embeddedEventLoop.advanceTime(by: .milliseconds(999))
        #expect(dead.isActive)
        dead.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        #expect(!dead.isActive)
        guard case .silent? = deadConnection.endReason else {
            Issue.record("closed, but not as silent: \(String(describing: deadConnection.endReason))")
            return
        }
    }
}
