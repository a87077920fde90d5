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

@Suite("Refused connections on an EmbeddedChannel")
struct RefusalHandlerTests {
    @Test("a refused Parley peer, or a device beginning TLS, is told why; an app in the original framing is closed without a byte; silence is closed at the first-byte timeout")
    func refusal() throws {
        let close = CloseFrame(code: .tooManyConnections, message: "too many connections")
        let parley = EmbeddedChannel()
        try parley.pipeline.syncOperations.addHandler(RefusalHandler(closeFrame: close, firstByteTimeout: .seconds(5)))
        try parley.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        var hello = ByteBuffer()
        rawHello().write(to: &hello)
        try parley.writeInbound(hello)
        var written = try #require(try parley.readOutbound(as: ByteBuffer.self))
        var decoder = FrameDecoder()
        #expect(try decoder.decode(buffer: &written) == .close(close))

        // A device beginning TLS is told in the clear, ahead of TLS, which its dialler reads (ClearRefusalReader).
        let device = EmbeddedChannel()
        try device.pipeline.syncOperations.addHandler(RefusalHandler(closeFrame: close, firstByteTimeout: .seconds(5)))
        try device.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        try device.writeInbound(ByteBuffer(bytes: [DeviceTLS.handshakeRecordType, 0x03, 0x01, 0x00, 0x05]))
        var toDevice = try #require(try device.readOutbound(as: ByteBuffer.self))
        var deviceDecoder = FrameDecoder()
        #expect(try deviceDecoder.decode(buffer: &toDevice) == .close(close))

        let original = EmbeddedChannel()
        try original.pipeline.syncOperations.addHandler(RefusalHandler(closeFrame: close, firstByteTimeout: .seconds(5)))
        try original.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        try original.writeInbound(PipelineFixtures.originalFrame("{}"))
        #expect(try original.readOutbound(as: ByteBuffer.self) == nil)
        #expect(!original.isActive)

        let silent = EmbeddedChannel()
        try silent.pipeline.syncOperations.addHandler(RefusalHandler(closeFrame: close, firstByteTimeout: .seconds(5)))
        try silent.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        silent.embeddedEventLoop.advanceTime(by: .seconds(5))
        #expect(!silent.isActive, "a refused connection that never speaks is closed at the first-byte timeout")
    }
}
