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

/// What the channel handlers' tests build their pipelines from: no sockets, time moved by hand.
enum PipelineFixtures {
    static func originalFrame(_ json: String) -> ByteBuffer {
        var buffer = ByteBuffer()
        OriginalFrameEncoder.write(ByteBuffer(string: json), to: &buffer)
        return buffer
    }

    static func connected(_ handlers: [any ChannelHandler]) throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandlers(handlers)
        try channel.connect(to: SocketAddress(ipAddress: "10.0.0.2", port: 7206)).wait()
        return channel
    }

    static func message(_ id: UInt64) -> Frame {
        .message(MessageFrame(header: MessageHeader(typeName: "test.Note", id: MessageID(id)), payload: ByteBuffer(string: "{}")))
    }

    /// A `test.Note` message of `bytes` bytes, a reply to `inReplyTo` if given.
    static func note(_ id: UInt64, inReplyTo: UInt64? = nil, bytes: Int = 2) -> Frame {
        .message(
            MessageFrame(
                header: MessageHeader(typeName: "test.Note", id: MessageID(id), inReplyTo: inReplyTo.map { MessageID($0) }),
                payload: ByteBuffer(repeating: UInt8(ascii: "x"), count: bytes)
            ))
    }
}
