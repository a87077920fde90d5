import Foundation
import Logging
import NIOCore
import ParleyWire

/// Turns a connection in the original Swift Talk debugger framing into a Parley connection, so that everything
/// above it (handshake, routing, the debugger) sees an ordinary peer:
/// - before the app's first frame it writes the hello the app would have sent (open, version 1, capability
///   ``OriginalFraming/capability``, accepting what the translator can carry back);
/// - each frame body becomes the Parley message the ``OriginalFramingTranslator`` says it stands for; a body it
///   cannot translate is dropped with a (throttled) warning, and the connection stays;
/// - a message for the app goes out as a frame body if the translator can carry it; anything else Parley would
///   send (our hello, pings, goodbyes, messages the app cannot receive) is not for such an app and is dropped. A
///   request it cannot receive is answered at once with an error reply, so the sender does not wait in vain.
final class OriginalFramingBridge: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = Frame
    typealias OutboundIn = Frame
    typealias OutboundOut = ByteBuffer

    private let translator: any OriginalFramingTranslator
    private let logger: Logger
    private let logThrottle: LogThrottle
    private var greeted = false
    private var nextMessageID: UInt64 = 1

    init(translator: any OriginalFramingTranslator, logger: Logger, logThrottle: LogThrottle) {
        self.translator = translator
        self.logger = logger
        self.logThrottle = logThrottle
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if !greeted {
            greeted = true
            context.fireChannelRead(wrapInboundOut(.hello(hello(remote: context.channel.remoteAddress))))
        }
        let body = unwrapInboundIn(data)
        let message: (typeName: String, payload: ByteBuffer)
        do {
            message = try translator.message(fromFrameBody: body)
        } catch {
            logThrottle.warning(
                "frame in the original debugger framing not understood; dropped, nothing delivered",
                metadata: ["reason": "\(error)", "bytes": "\(body.readableBytes)"],
                to: logger
            )
            return
        }
        let header = MessageHeader(typeName: message.typeName, id: MessageID(nextMessageID))
        nextMessageID += 1
        context.fireChannelRead(wrapInboundOut(.message(MessageFrame(header: header, payload: message.payload))))
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .message(let message) = unwrapOutboundIn(data) else {
            promise?.succeed()
            return
        }
        if let body = translator.frameBody(forMessage: message.header.typeName, payload: message.payload) {
            context.write(wrapOutboundOut(body), promise: promise)
            return
        }
        promise?.succeed()
        if message.header.flags.contains(.expectsReply) {
            let reply = ErrorReplyFrame(
                inReplyTo: message.header.id, code: .unknownType,
                message: "an app of the original Swift Talk debugger cannot receive \(message.header.typeName.excerpt())"
            )
            context.fireChannelRead(wrapInboundOut(.errorReply(reply)))
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
