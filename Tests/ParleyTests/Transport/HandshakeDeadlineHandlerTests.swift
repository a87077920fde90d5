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

@Suite("The handshake deadline on an EmbeddedChannel")
struct HandshakeDeadlineHandlerTests {
    @Test("the handshake deadline starts with the first byte on an accepted connection, and a hello in time disarms it")
    func handshakeDeadline() throws {
        let late = EmbeddedChannel()
        try late.pipeline.syncOperations.addHandler(HandshakeDeadlineHandler(timeout: .seconds(5), startsWithFirstByte: true))
        try late.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        // Silence is not a handshake that is late: the clock has not started.
        late.embeddedEventLoop.advanceTime(by: .seconds(60))
        try late.throwIfErrorCaught()
        late.pipeline.fireUserInboundEventTriggered(ReadActivityHandler.FirstBytes())
        late.embeddedEventLoop.advanceTime(by: .milliseconds(4999))
        try late.throwIfErrorCaught()
        late.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        #expect(throws: HandshakeError.timedOut(seconds: 5)) { try late.throwIfErrorCaught() }

        let dialled = EmbeddedChannel()
        try dialled.pipeline.syncOperations.addHandler(HandshakeDeadlineHandler(timeout: .seconds(5), frames: { 2 }, startsWithFirstByte: false))
        try dialled.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        try dialled.writeFrames(rawHello())
        dialled.embeddedEventLoop.advanceTime(by: .seconds(4))
        try dialled.writeFrames(Frame.auth(ByteBuffer(string: "proof")))
        dialled.embeddedEventLoop.advanceTime(by: .seconds(60))
        try dialled.throwIfErrorCaught()
        // Both frames passed on, and the handler left the pipeline once the deadline was met.
        #expect(try dialled.readFrames().count == 2)
        #expect(throws: (any Error).self) { try dialled.pipeline.syncOperations.handler(type: HandshakeDeadlineHandler.self) }

        // Both handshake frames in one read meet the deadline as well.
        let together = EmbeddedChannel()
        try together.pipeline.syncOperations.addHandler(HandshakeDeadlineHandler(timeout: .seconds(5), frames: { 2 }, startsWithFirstByte: false))
        try together.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        try together.writeFrames(rawHello(), Frame.auth(ByteBuffer(string: "proof")))
        together.embeddedEventLoop.advanceTime(by: .seconds(60))
        try together.throwIfErrorCaught()
        #expect(try together.readFrames().count == 2)
    }
}
