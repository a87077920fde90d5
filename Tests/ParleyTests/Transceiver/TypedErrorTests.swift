import Foundation
import NIOCore
@testable import Parley
import ParleyTestSupport
import Testing

@Suite("Errors a caller can match: typed causes, with their text derived from them")
struct TypedErrorTests {
    @Test("a handler's CodedRefusal reaches the requester with its own code and words, not handler-failed")
    func codedRefusal() async throws {
        struct Busy: CodedRefusal {
            var errorReplyCode: ErrorCode { ErrorCode(rawValue: 150) }
            var description: String { "busy right now" }
        }
        let server = makeTransceiver("server")
        let client = makeTransceiver("client", listen: nil)
        server.respond(to: Echo.self) { _, _ -> Echo in throw Busy() }
        try await withRunning([server, client]) {
            let peer = try await client.connect(to: server.loopbackEndpoint)
            let refused = await #expect(throws: TransceiverError.self) {
                _ = try await client.request(Echo(text: "x"), from: peer, expecting: Echo.self)
            }
            guard case .remoteError(let code, let message)? = refused else {
                Issue.record("not a remote error: \(String(describing: refused))")
                return
            }
            #expect(code == ErrorCode(rawValue: 150))
            #expect(message == "busy right now")
            // A refusal is an answer, not a failure of the handler.
            #expect(server.statistics.handlerFailures == 0)
        }
    }

    @Test("a disconnect's cause is a value to switch over, and its sentence comes from it")
    func disconnectReasons() {
        #expect(DisconnectReason.handshakeFailed(.wrongSecret).description == "the handshake failed: \(HandshakeError.wrongSecret)")
        let reset = TransportFailure.io(errno: ECONNRESET, message: "Connection reset by peer (errno: 104)")
        #expect(DisconnectReason.transportFailed(reset).description == "I/O error: Connection reset by peer (errno: 104)")
        #expect(TransportFailure.localAddressGone(host: "192.0.2.7").description == "this node's address 192.0.2.7 went away (network change)")
        #expect(TransportFailure.interfaceDown(name: "eth0").description == "interface eth0 went down (network change)")
    }

    @Test("an I/O error ends a connection as .io with its errno")
    func ioErrorReason() {
        let transceiver = makeTransceiver("node", listen: nil)
        let reason = transceiver.reason(for: IOError(errnoCode: ECONNRESET, reason: "read"))
        guard case .transportFailed(.io(let code, let message)) = reason else {
            Issue.record("not an I/O failure: \(reason)")
            return
        }
        #expect(code == ECONNRESET)
        #expect(reason.description == "I/O error: \(message)")
    }

    @Test("a socket failure no case describes keeps its error's type and words")
    func unrecognizedSocketFailure() {
        struct Strange: Error, CustomStringConvertible { var description: String { "something strange" } }
        let failure = SocketFailure(Strange())
        guard case .other(let unrecognized) = failure else {
            Issue.record("classified: \(failure)")
            return
        }
        #expect(unrecognized.errorType == "Strange")
        #expect(unrecognized.message == "something strange")
        #expect(failure.description == "something strange")
    }
}
