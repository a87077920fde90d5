import Foundation
import Logging
import NIOCore
import NIOPosix
import ParleyBlocking
import ParleyWire

/// Turns a connection in the original Swift Talk debugger framing into a Parley connection, so that everything
/// above it (handshake, routing, the debugger) sees an ordinary peer:
/// - before the app's first frame it writes the hello the app would have sent (open, version 1, capability
///   ``OriginalFraming/capability``, accepting what the translator can carry back);
/// - each frame body becomes the Parley message the ``OriginalFramingTranslator`` says it stands for; a body it
///   cannot translate is dropped with a (throttled) warning, and the connection stays. A large body is
///   translated on the blocking-work pool, not on the event loop (reading its JSON takes tens of milliseconds
///   per megabyte, and the loop serves other peers): meanwhile the connection's later frames wait in order,
///   reading pauses, and the end of the connection is passed on only after every frame that came before it;
/// - a message for the app goes out as a frame body if the translator can carry it; anything else Parley would
///   send (our hello, pings, goodbyes, messages the app cannot receive) is not for such an app and is dropped. A
///   request it cannot receive is answered at once with an error reply, so the sender does not wait in vain.
final class OriginalFramingBridge: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = FrameBatch
    typealias OutboundIn = FrameBatch
    typealias OutboundOut = ByteBuffer

    /// Bodies from this size on are translated on the pool.
    static let offloadMinimum = 256 * 1024

    private typealias Translation = Result<(typeName: String, payload: ByteBuffer), any Error>

    private let translator: any OriginalFramingTranslator
    private let logger: Logger
    private let logThrottle: LogThrottle
    /// Where large bodies are translated; nil translates every body on the event loop.
    private let pool: BlockingPool?
    private var greeted = false
    private var nextMessageID: UInt64 = 1
    /// A body is being translated on the pool; what arrives meanwhile waits in `waiting`, in order.
    private var translating = false
    private var waiting: CircularBuffer<ByteBuffer> = []
    /// A read asked for while translating, issued when the translation is done.
    private var readHeld = false
    /// The connection ended while bodies were still to be translated: passed on after them.
    private var inactiveHeld = false

    init(translator: any OriginalFramingTranslator, logger: Logger, logThrottle: LogThrottle, pool: BlockingPool? = nil) {
        self.translator = translator
        self.logger = logger
        self.logThrottle = logThrottle
        self.pool = pool
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if !greeted {
            greeted = true
            context.fireChannelRead(wrapInboundOut(FrameBatch([.hello(hello(remote: context.channel.remoteAddress))])))
        }
        waiting.append(unwrapInboundIn(data))
        translateWaiting(context: context)
    }

    func read(context: ChannelHandlerContext) {
        if translating { readHeld = true } else { context.read() }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if translating || !waiting.isEmpty { inactiveHeld = true } else { context.fireChannelInactive() }
    }

    /// Translates waiting bodies in order: small ones here and now, a large one on the pool, after which the rest
    /// continue.
    private func translateWaiting(context: ChannelHandlerContext) {
        while !translating, let body = waiting.popFirst() {
            guard let pool, body.readableBytes >= Self.offloadMinimum else {
                deliver(Self.translate(body, with: translator), bytes: body.readableBytes, context: context)
                continue
            }
            translating = true
            let translator = translator
            let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            pool.run(completingOn: context.eventLoop) {
                Self.translate(body, with: translator)
            }.whenComplete { outcome in
                let (bridge, context) = loopBound.value
                bridge.translating = false
                // A failure of the outcome itself: the pool is shutting down.
                bridge.deliver(outcome.flatMap { $0 }, bytes: body.readableBytes, context: context)
                bridge.translateWaiting(context: context)
                // Outside a socket read: the handlers above deliver what they were given at a read's end.
                context.fireChannelReadComplete()
            }
        }
        guard !translating else { return }
        if inactiveHeld {
            inactiveHeld = false
            context.fireChannelInactive()
        } else if readHeld {
            readHeld = false
            context.read()
        }
    }

    private static func translate(_ body: ByteBuffer, with translator: any OriginalFramingTranslator) -> Translation {
        do {
            return .success(try translator.message(fromFrameBody: body))
        } catch {
            return .failure(error)
        }
    }

    private func deliver(_ translation: Translation, bytes: Int, context: ChannelHandlerContext) {
        switch translation {
        case .success(let message):
            let header = MessageHeader(typeName: message.typeName, id: MessageID(nextMessageID))
            nextMessageID += 1
            context.fireChannelRead(wrapInboundOut(FrameBatch([.message(MessageFrame(header: header, payload: message.payload))])))
        case .failure(let error):
            logThrottle.warning(
                "frame in the original debugger framing not understood; dropped, nothing delivered",
                metadata: ["reason": "\(error)", "bytes": "\(bytes)"],
                to: logger
            )
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        var bodies: [ByteBuffer] = []
        var refusals: [Frame] = []
        for case .message(let message) in unwrapOutboundIn(data).frames {
            if let body = translator.frameBody(forMessage: message.header.typeName, payload: message.payload) {
                bodies.append(body)
            } else if message.header.flags.contains(.expectsReply) {
                let reply = ErrorReplyFrame(
                    inReplyTo: message.header.id, code: .unknownType,
                    message: "an app of the original Swift Talk debugger cannot receive \(message.header.typeName.excerpt())"
                )
                refusals.append(.errorReply(reply))
            }
        }
        for (index, body) in bodies.enumerated() {
            context.write(wrapOutboundOut(body), promise: index == bodies.count - 1 ? promise : nil)
        }
        if bodies.isEmpty { promise?.succeed() }
        if !refusals.isEmpty {
            // Handed up as if read: outside a socket read, so a read's end must follow, as after a translation;
            // the handlers above act on what they saw at a read's end (the idle clock counts the replies then).
            context.fireChannelRead(wrapInboundOut(FrameBatch(refusals)))
            context.fireChannelReadComplete()
        }
    }

    /// The hello such an app would send if it spoke Parley: a fresh id (it has none of its own), its address as
    /// its name.
    private func hello(remote: SocketAddress?) -> HelloFrame {
        let address = remote.map(PeerConnection.describe) ?? "unknown address"
        let hello = Hello(
            peerID: UUID().uuidString, name: "debugger app at \(address)",
            capabilities: [OriginalFraming.capability], accepts: translator.accepts
        )
        // A struct of strings and arrays of strings always encodes.
        let body = try! JSONEncoder().encode(hello)
        return HelloFrame(minimumVersion: ProtocolVersion.current, maximumVersion: ProtocolVersion.current, body: ByteBuffer(bytes: body))
    }
}
