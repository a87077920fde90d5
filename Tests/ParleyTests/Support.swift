import Foundation
import Logging
import NIOCore
@testable import Parley
import ParleyTestSupport
import ParleyWire
import Synchronization
import Testing

/// A transceiver for tests: fresh identity, loopback, any free port, optional log capture.
func makeTransceiver(
    _ name: String,
    listen: String? = "127.0.0.1",
    logs: LogCapture? = nil,
    adjust: (inout TransceiverConfiguration) -> Void = { _ in }
) -> Transceiver {
    var configuration = TransceiverConfiguration(
        name: name, identity: .ephemeral, listenHost: listen, port: 0,
        logger: logs?.logger ?? Logger(label: "parley.test", factory: { _ in SwiftLogNoOpLogHandler() })
    )
    // Liveness is tested where it is the subject (those tests set their own timeout); elsewhere a CPU-starved CI
    // machine must not turn a slow event loop into a dead peer.
    configuration.heartbeatTimeout = .seconds(15)
    adjust(&configuration)
    return Transceiver(configuration: configuration)
}

extension Transceiver {
    var loopbackEndpoint: Endpoint { Endpoint(host: "127.0.0.1", port: listeningPort!) }

    /// Number of live connections (including duplicates not yet closed).
    var connectionCount: Int { registry.connections.count }
}

/// A counter handlers and tasks can share.
final class Counter: Sendable {
    private let value = Mutex(0)
    func increment() { value.withLock { $0 += 1 } }
    var count: Int { value.withLock { $0 } }
}

/// The transport's side of the original framing, isolated from the debugger's: each frame body is delivered as a
/// message of type `inbound` with the body as its payload, and a message of type `outbound` goes back as a frame.
struct VerbatimTranslator: OriginalFramingTranslator {
    static let inbound = "test.original.Frame"
    static let outbound = "test.original.Reply"
    /// A body starting with this byte cannot be translated.
    static let untranslatable = UInt8(ascii: "!")

    struct Untranslatable: Error, CustomStringConvertible {
        var description: String { "the body starts with \"!\"" }
    }

    var accepts: [String] { [Self.outbound] }

    func message(fromFrameBody body: ByteBuffer) throws -> (typeName: String, payload: ByteBuffer) {
        if body.getInteger(at: body.readerIndex, as: UInt8.self) == Self.untranslatable { throw Untranslatable() }
        return (Self.inbound, body)
    }

    func frameBody(forMessage typeName: String, payload: ByteBuffer) -> ByteBuffer? {
        typeName == Self.outbound ? payload : nil
    }
}
