import NIOCore
import NIOEmbedded
import ParleySecurity
import ParleyWire
import Testing

/// The sealing handler on an EmbeddedChannel, with real keys.
@Suite("Frame protection handler")
struct FrameProtectionHandlerTests {
    /// Counts the reads that reach the head of the pipeline.
    final class ReadCounter: ChannelOutboundHandler {
        typealias OutboundIn = FrameBatch
        var reads = 0
        func read(context: ChannelHandlerContext) {
            reads += 1
            context.read()
        }
    }

    /// A channel with the handler, and the peer's keys to make and read its sealed frames.
    static func setUp() throws -> (channel: EmbeddedChannel, counter: ReadCounter, local: any FrameProtection, peer: any FrameProtection) {
        let (local, peer) = try KeyScheduleTests.pair()
        let counter = ReadCounter()
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(counter)
        try channel.pipeline.syncOperations.addHandler(FrameProtectionHandler())
        return (channel, counter, local.frameProtection(), peer.frameProtection())
    }

    static let allocator = ByteBufferAllocator()

    @Test("plaintext passes both ways until the keys are installed; then frames leave sealed")
    func switchOutbound() throws {
        var (channel, _, local, peer) = try Self.setUp()
        let hello = HandshakeStateMachineFrames.hello
        try channel.writeInbound(FrameBatch([hello]))
        #expect(try channel.readInbound(as: FrameBatch.self) == FrameBatch([hello]))
        try channel.writeOutbound(FrameBatch([Frame.auth(ByteBuffer(string: "proof"))]))
        #expect(try channel.readOutbound(as: FrameBatch.self) == FrameBatch([.auth(ByteBuffer(string: "proof"))]))

        channel.pipeline.triggerUserOutboundEvent(FrameProtectionHandler.Install(local), promise: nil)
        let message = KeyScheduleTests.message("after the switch")
        let second = KeyScheduleTests.message("and the next", id: 2)
        try channel.writeOutbound(FrameBatch([message, second]))
        let sealed = try #require(try channel.readOutbound(as: FrameBatch.self))
        #expect(try sealed.frames.map { try peer.open(sealed: KeyScheduleTests.sealedBody($0)) } == [message, second])
        _ = try channel.finish()
    }

    @Test("sealed frames that arrive before the keys wait, reading stops, and both resume in order once installed")
    func earlySealedFrames() throws {
        var (channel, counter, local, peer) = try Self.setUp()
        let first = KeyScheduleTests.message("one", id: 1)
        let second = KeyScheduleTests.message("two", id: 2)
        try channel.writeInbound(FrameBatch([try peer.seal(first, allocator: Self.allocator)]))
        try channel.writeInbound(FrameBatch([try peer.seal(second, allocator: Self.allocator)]))
        #expect(try channel.readInbound(as: FrameBatch.self) == nil)

        let readsBefore = counter.reads
        channel.read()
        #expect(counter.reads == readsBefore, "a read went through while sealed frames were waiting")

        channel.pipeline.triggerUserOutboundEvent(FrameProtectionHandler.Install(local), promise: nil)
        #expect(try channel.readInbound(as: FrameBatch.self) == FrameBatch([first, second]))
        #expect(counter.reads == readsBefore + 1, "the held read was not issued after the switch")
        _ = try channel.finish()
    }

    @Test("after the switch a plaintext frame fails the connection, and nothing after it is passed on")
    func plaintextAfterSwitch() throws {
        var (channel, _, local, peer) = try Self.setUp()
        channel.pipeline.triggerUserOutboundEvent(FrameProtectionHandler.Install(local), promise: nil)
        #expect(throws: WireError.plaintextAfterSealing(kind: "message")) {
            try channel.writeInbound(FrameBatch([KeyScheduleTests.message("in the clear")]))
        }
        try channel.writeInbound(FrameBatch([try peer.seal(KeyScheduleTests.message("late"), allocator: Self.allocator)]))
        #expect(try channel.readInbound(as: FrameBatch.self) == nil)
        _ = try channel.finish()
    }

    @Test("a plaintext frame behind an early sealed frame is refused as well")
    func plaintextBehindSealed() throws {
        var (channel, _, _, peer) = try Self.setUp()
        try channel.writeInbound(FrameBatch([try peer.seal(KeyScheduleTests.message("sealed"), allocator: Self.allocator)]))
        #expect(throws: WireError.plaintextAfterSealing(kind: "ping")) { try channel.writeInbound(FrameBatch([Frame.ping(1)])) }
        _ = try channel.finish()
    }

    @Test("a plaintext frame right behind the peer's proof, before the keys are in, is refused: it cannot pass as the proven peer's")
    func plaintextBehindProof() throws {
        let (channel, _, _, _) = try Self.setUp()
        try channel.writeInbound(FrameBatch([Frame.auth(ByteBuffer(string: "proof"))]))
        #expect(try channel.readInbound(as: FrameBatch.self) == FrameBatch([.auth(ByteBuffer(string: "proof"))]))
        #expect(throws: WireError.plaintextAfterSealing(kind: "message")) {
            try channel.writeInbound(FrameBatch([KeyScheduleTests.message("slipped in")]))
        }
        #expect(try channel.readInbound(as: FrameBatch.self) == nil)
        _ = try channel.finish()
    }

    @Test("a plaintext close right behind the peer's proof is refused: a machine in the middle cannot end the connection as the peer")
    func closeBehindProofRefused() throws {
        let (channel, _, _, _) = try Self.setUp()
        let proof = Frame.auth(ByteBuffer(string: "proof"))
        let forged = Frame.close(CloseFrame(code: .goingAway, message: "bye from the middle"))
        #expect(throws: WireError.plaintextAfterSealing(kind: "close")) { try channel.writeInbound(FrameBatch([proof, forged])) }
        #expect(try channel.readInbound(as: FrameBatch.self) == FrameBatch([proof]), "the proof before it is passed on, the close is not")
        #expect(try channel.readInbound(as: FrameBatch.self) == nil)
        _ = try channel.finish()
    }

    @Test("after the switch a plaintext close is refused like any plaintext frame, authentication-failed included")
    func closeAfterSwitchRefused() throws {
        let (channel, _, local, _) = try Self.setUp()
        try channel.writeInbound(FrameBatch([Frame.auth(ByteBuffer(string: "proof"))]))
        _ = try channel.readInbound(as: FrameBatch.self)
        channel.pipeline.triggerUserOutboundEvent(FrameProtectionHandler.Install(local), promise: nil)
        let refusal = Frame.close(CloseFrame(code: .authenticationFailed, message: "wrong proof"))
        #expect(throws: WireError.plaintextAfterSealing(kind: "close")) { try channel.writeInbound(FrameBatch([refusal])) }
        #expect(try channel.readInbound(as: FrameBatch.self) == nil)
        _ = try channel.finish()
    }

    /// The dialer's side: the acceptor's proof in, ours out behind it, then the switch.
    static func dialerAfterProofs() throws -> (channel: EmbeddedChannel, peer: any FrameProtection) {
        let (channel, _, local, peer) = try setUp()
        try channel.writeInbound(FrameBatch([Frame.auth(ByteBuffer(string: "acceptor's proof"))]))
        _ = try channel.readInbound(as: FrameBatch.self)
        try channel.writeOutbound(FrameBatch([Frame.auth(ByteBuffer(string: "dialer's proof"))]))
        _ = try channel.readOutbound(as: FrameBatch.self)
        channel.pipeline.triggerUserOutboundEvent(FrameProtectionHandler.Install(local), promise: nil)
        return (channel, peer)
    }

    @Test("a dialer reads the acceptor's plaintext refusal of its proof (authentication-failed) in place of the first sealed frame")
    func refusalOfOwnProofPasses() throws {
        let (channel, _) = try Self.dialerAfterProofs()
        let refusal = Frame.close(CloseFrame(code: .authenticationFailed, message: "the peer does not know this node's shared secret"))
        try channel.writeInbound(FrameBatch([refusal]))
        #expect(try channel.readInbound(as: FrameBatch.self) == FrameBatch([refusal]))
        _ = try channel.finish()
    }

    @Test("a dialer refuses a plaintext close with any other code in place of the first sealed frame")
    func otherPlaintextCloseBeforeVerdictRefused() throws {
        let (channel, _) = try Self.dialerAfterProofs()
        let forged = Frame.close(CloseFrame(code: .goingAway, message: "bye from the middle"))
        #expect(throws: WireError.plaintextAfterSealing(kind: "close")) { try channel.writeInbound(FrameBatch([forged])) }
        #expect(try channel.readInbound(as: FrameBatch.self) == nil)
        _ = try channel.finish()
    }

    @Test("once a sealed frame of the acceptor has opened (it accepted our proof), a plaintext authentication-failed close is refused")
    func refusalAfterFirstSealedFrameRefused() throws {
        var (channel, peer) = try Self.dialerAfterProofs()
        let ping = Frame.ping(1)
        let refusal = Frame.close(CloseFrame(code: .authenticationFailed, message: "wrong proof"))
        #expect(throws: WireError.plaintextAfterSealing(kind: "close")) {
            try channel.writeInbound(FrameBatch([try peer.seal(ping, allocator: Self.allocator), refusal]))
        }
        #expect(try channel.readInbound(as: FrameBatch.self) == FrameBatch([ping]))
        #expect(try channel.readInbound(as: FrameBatch.self) == nil)
        _ = try channel.finish()
    }

    @Test("an acceptor, whose proof went out before the dialer's, never takes a plaintext close after the dialer's proof")
    func acceptorRefusesRefusal() throws {
        let (channel, _, local, _) = try Self.setUp()
        try channel.writeOutbound(FrameBatch([HandshakeStateMachineFrames.hello, Frame.auth(ByteBuffer(string: "acceptor's proof"))]))
        _ = try channel.readOutbound(as: FrameBatch.self)
        try channel.writeInbound(FrameBatch([Frame.auth(ByteBuffer(string: "dialer's proof"))]))
        _ = try channel.readInbound(as: FrameBatch.self)
        channel.pipeline.triggerUserOutboundEvent(FrameProtectionHandler.Install(local), promise: nil)
        let refusal = Frame.close(CloseFrame(code: .authenticationFailed, message: "wrong proof"))
        #expect(throws: WireError.plaintextAfterSealing(kind: "close")) { try channel.writeInbound(FrameBatch([refusal])) }
        _ = try channel.finish()
    }

    @Test("behind the peer's proof sealed frames wait for the keys, then pass in order")
    func sealedBehindProofWait() throws {
        var (channel, _, local, peer) = try Self.setUp()
        try channel.writeInbound(FrameBatch([Frame.auth(ByteBuffer(string: "proof"))]))
        _ = try channel.readInbound(as: FrameBatch.self)
        let pipelined = KeyScheduleTests.message("pipelined", id: 3)
        try channel.writeInbound(FrameBatch([try peer.seal(pipelined, allocator: Self.allocator)]))
        #expect(try channel.readInbound(as: FrameBatch.self) == nil)
        channel.pipeline.triggerUserOutboundEvent(FrameProtectionHandler.Install(local), promise: nil)
        #expect(try channel.readInbound(as: FrameBatch.self) == FrameBatch([pipelined]))
        _ = try channel.finish()
    }

    @Test("the end of the stream behind sealed frames still waiting for the keys is passed on after them, not before")
    func endOfStreamBehindWaitingFrames() throws {
        final class EventRecorder: ChannelInboundHandler {
            typealias InboundIn = FrameBatch
            var log: [String] = []
            func channelRead(context: ChannelHandlerContext, data: NIOAny) {
                log += unwrapInboundIn(data).frames.map { _ in "frame" }
            }
            func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
                if let event = event as? ChannelEvent, event == .inputClosed { log.append("end") }
            }
        }
        var (channel, _, local, peer) = try Self.setUp()
        let recorder = EventRecorder()
        try channel.pipeline.syncOperations.addHandler(recorder)
        try channel.writeInbound(FrameBatch([try peer.seal(KeyScheduleTests.message("one", id: 1), allocator: Self.allocator)]))
        try channel.writeInbound(FrameBatch([try peer.seal(KeyScheduleTests.message("two", id: 2), allocator: Self.allocator)]))
        channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        #expect(recorder.log.isEmpty, "the end overtook the frames waiting for the keys")
        channel.pipeline.triggerUserOutboundEvent(FrameProtectionHandler.Install(local), promise: nil)
        #expect(recorder.log == ["frame", "frame", "end"])
        _ = try channel.finish()
    }

    @Test("a sealed frame whose tag fails is reported as forged and not passed on")
    func forged() throws {
        var (channel, _, local, peer) = try Self.setUp()
        channel.pipeline.triggerUserOutboundEvent(FrameProtectionHandler.Install(local), promise: nil)
        var body = KeyScheduleTests.sealedBody(try peer.seal(KeyScheduleTests.message("genuine"), allocator: Self.allocator))
        body.setInteger(body.getInteger(at: body.readerIndex, as: UInt8.self)! ^ 0x80, at: body.readerIndex)
        #expect(throws: WireError.forgedFrame) { try channel.writeInbound(FrameBatch([Frame.sealed(body)])) }
        #expect(try channel.readInbound(as: FrameBatch.self) == nil)
        #expect(WireError.forgedFrame.description.hasPrefix("frame failed authentication: altered or forged"))
        #expect(WireError.forgedFrame.closeCode == .authenticationFailed)
        _ = try channel.finish()
    }
}

extension FrameProtectionHandlerTests {
    @Test("within one read: the proof passes and the sealed frames behind it wait; a forged frame passes on the frames before it, then fails")
    func mixedBatches() throws {
        var (channel, _, local, peer) = try Self.setUp()
        let one = KeyScheduleTests.message("one", id: 1)
        let two = KeyScheduleTests.message("two", id: 2)
        let proof = Frame.auth(ByteBuffer(string: "proof"))
        try channel.writeInbound(FrameBatch([proof, try peer.seal(one, allocator: Self.allocator)]))
        #expect(try channel.readInbound(as: FrameBatch.self) == FrameBatch([proof]))
        channel.pipeline.triggerUserOutboundEvent(FrameProtectionHandler.Install(local), promise: nil)
        #expect(try channel.readInbound(as: FrameBatch.self) == FrameBatch([one]))

        let sealedTwo = try peer.seal(two, allocator: Self.allocator)  // sealed in the order they are sent
        var forged = KeyScheduleTests.sealedBody(try peer.seal(KeyScheduleTests.message("forged", id: 4), allocator: Self.allocator))
        forged.setInteger(forged.getInteger(at: forged.readerIndex, as: UInt8.self)! ^ 0x80, at: forged.readerIndex)
        let three = KeyScheduleTests.message("three", id: 3)
        #expect(throws: WireError.forgedFrame) {
            try channel.writeInbound(FrameBatch([sealedTwo, .sealed(forged), try peer.seal(three, allocator: Self.allocator)]))
        }
        #expect(try channel.readInbound(as: FrameBatch.self) == FrameBatch([two]))
        #expect(try channel.readInbound(as: FrameBatch.self) == nil)
        _ = try channel.finish()
    }
}

enum HandshakeStateMachineFrames {
    static let hello = Frame.hello(HelloFrame(minimumVersion: 1, maximumVersion: 1, body: ByteBuffer(string: "{}")))
}
