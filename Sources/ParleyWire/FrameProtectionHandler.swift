import NIOCore

/// Sits between the frame codec and the rest of the pipeline of a connection that authenticates. Until the
/// handshake installs the session keys it passes plaintext frames through; from then on every outbound frame
/// leaves sealed, and every inbound frame must be sealed and authentic or the connection is failed.
///
/// The peer may switch before our handshake code has installed the keys: a dialer sends sealed frames right
/// behind its proof, while the acceptor is still checking that proof. Such frames wait here, and reading stops
/// until the keys arrive, so that a peer which never authenticates cannot make them pile up.
///
/// Once the peer's proof is in, plaintext is refused, a close frame included: a close is the one frame that could
/// otherwise end an authenticated connection with a code and text of an on-path attacker's choosing. The one
/// exception is the refusal of our own proof (protocol §4.1): a dialer proves itself after the acceptor did, and
/// an acceptor that finds the proof wrong has no keys to seal its `authentication-failed` close with. So when our
/// proof went out after the peer's, that close passes until the peer's first sealed frame shows it accepted us.
public final class FrameProtectionHandler: ChannelDuplexHandler, RemovableChannelHandler {
    public typealias InboundIn = FrameBatch
    public typealias InboundOut = FrameBatch
    public typealias OutboundIn = FrameBatch
    public typealias OutboundOut = FrameBatch

    /// A user outbound event: from now on seal and open with `protection`. Trigger it right after writing the
    /// last plaintext frame of the handshake; frames written after it leave sealed.
    public struct Install: Sendable {
        public var protection: any FrameProtection
        public init(_ protection: any FrameProtection) { self.protection = protection }
    }

    private var protection: (any FrameProtection)?
    /// Bodies of sealed frames that arrived before the keys.
    private var waiting: [ByteBuffer] = []
    /// A read the pipeline asked for while frames were waiting; issued once the keys are installed.
    private var readHeld = false
    /// After a forged or plaintext frame the inbound stream is not trusted any more: nothing else is passed on.
    private var inboundFailed = false
    /// The peer's auth frame (its proof, its last plaintext frame) has passed. From then on it sends only sealed
    /// frames (or the refusal of our proof, below); anything else was slipped in behind the proof by someone
    /// without the keys, and must not reach the handshake code as if the proven peer had sent it.
    private var peerProofPassed = false
    /// Our proof went out after the peer's (we dialled), and no sealed frame of the peer has opened since: the
    /// peer may still refuse our proof, and that refusal can only come in plaintext.
    private var ownProofAwaitsVerdict = false
    /// The peer's end of the stream, arrived while sealed frames wait for the keys: passed on after them, or the
    /// reader would see the stream end first and the frames would be lost.
    private var inputClosedHeld = false

    public init() {}

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !inboundFailed else { return }
        var passed: [Frame] = []
        for frame in unwrapInboundIn(data).frames {
            switch (frame, protection) {
            case (.sealed(let body), .some):
                do {
                    // In place: opening advances the protection's state (its expected sequence number).
                    passed.append(try protection!.open(sealed: body))
                    ownProofAwaitsVerdict = false
                } catch {
                    return fail(error, after: passed, context: context)
                }
            case (.close(let close), _) where ownProofAwaitsVerdict && waiting.isEmpty && close.code == .authenticationFailed:
                passed.append(frame)
            case (_, .some):
                return fail(.plaintextAfterSealing(kind: HandshakeStateMachine.name(of: frame)), after: passed, context: context)
            case (.sealed(let body), nil):
                waiting.append(body)
            case (_, nil) where !waiting.isEmpty:
                // The peer has switched to sealed frames; it may not switch back.
                return fail(.plaintextAfterSealing(kind: HandshakeStateMachine.name(of: frame)), after: passed, context: context)
            case (_, nil) where peerProofPassed:
                return fail(.plaintextAfterSealing(kind: HandshakeStateMachine.name(of: frame)), after: passed, context: context)
            case (.auth, nil):
                peerProofPassed = true
                passed.append(frame)
            case (_, nil):
                passed.append(frame)
            }
        }
        pass(passed, context: context)
    }

    public func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let channelEvent = event as? ChannelEvent, channelEvent == .inputClosed, protection == nil, !waiting.isEmpty {
            inputClosedHeld = true
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    public func read(context: ChannelHandlerContext) {
        if protection == nil && !waiting.isEmpty {
            readHeld = true
        } else {
            context.read()
        }
    }

    public func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard protection != nil else {
            if peerProofPassed, unwrapOutboundIn(data).frames.contains(where: { if case .auth = $0 { true } else { false } }) {
                ownProofAwaitsVerdict = true
            }
            context.write(data, promise: promise)
            return
        }
        do {
            var batch = unwrapOutboundIn(data)
            for index in batch.frames.indices {
                batch.frames[index] = try protection!.seal(batch.frames[index], allocator: context.channel.allocator)
            }
            context.write(wrapOutboundOut(batch), promise: promise)
        } catch {
            promise?.fail(error)
            context.fireErrorCaught(error)
            context.close(promise: nil)
        }
    }

    public func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        guard let install = event as? Install else {
            context.triggerUserOutboundEvent(event, promise: promise)
            return
        }
        guard protection == nil else {
            promise?.fail(ChannelError.inappropriateOperationForState)
            return
        }
        protection = install.protection
        promise?.succeed()
        let pending = waiting
        waiting = []
        if !pending.isEmpty {
            channelRead(context: context, data: NIOAny(FrameBatch(pending.map(Frame.sealed))))
            // Frames passed on outside a socket read reach the async side only with a read-complete.
            context.fireChannelReadComplete()
        }
        if inputClosedHeld {
            inputClosedHeld = false
            context.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        }
        if readHeld {
            readHeld = false
            context.read()
        }
    }

    private func pass(_ frames: [Frame], context: ChannelHandlerContext) {
        guard !frames.isEmpty else { return }
        context.fireChannelRead(wrapInboundOut(FrameBatch(frames)))
    }

    /// Passes on the frames that came before the failure, then the error; nothing after it.
    private func fail(_ error: WireError, after passed: [Frame], context: ChannelHandlerContext) {
        inboundFailed = true
        waiting = []
        pass(passed, context: context)
        context.fireErrorCaught(error)
    }
}
