import Foundation
@testable import Parley
import ParleyTestSupport
import Testing

/// How the end of a stream is reported. With a shared secret only the peer can seal a close frame, while anyone on
/// the path can end the TCP stream: a stream that ends without the peer's sealed close is not a goodbye.
@Suite("The end of a sealed stream", .timeLimit(.minutes(2)))
struct SealedStreamEndTests {
    /// The reason of the next `.disconnected` among `events`.
    static func nextDisconnection(_ events: AsyncStream<PeerEvent>) async -> DisconnectReason? {
        for await event in events {
            if case .disconnected(_, let reason) = event { return reason }
        }
        return nil
    }

    @Test("sealed: a stream the path ends without the peer's sealed close is reported as such, logged and counted")
    func cutOnThePath() async throws {
        try await EncryptionTests.withRelay(secret: .generate()) { server, _, _, relay, serverLogs in
            let events = server.peerEvents
            await relay.endStreamsToAcceptor()
            #expect(await Self.nextDisconnection(events) == .endedWithoutSealedClose)
            #expect(server.statistics.endsWithoutSealedClose == 1)
            #expect(await serverLogs.logged(mentioning: "sealed connection ended without the peer's sealed close frame"))
        }
    }

    @Test("sealed: a peer that leaves with its sealed close is a goodbye, not counted as a cut")
    func goodbye() async throws {
        try await EncryptionTests.withRelay(secret: .generate()) { server, client, _, _, serverLogs in
            let events = server.peerEvents
            await client.stop()
            guard case .peerSaidGoodbye(.goingAway, _)? = await Self.nextDisconnection(events) else {
                Issue.record("the client's goodbye was not reported as one")
                return
            }
            #expect(server.statistics.endsWithoutSealedClose == 0)
            #expect(serverLogs.records(mentioning: "without the peer's sealed close").isEmpty)
        }
    }

    @Test("open: a stream that ends without a close frame is the peer closing, as before, and not counted")
    func openMode() async throws {
        try await EncryptionTests.withRelay(secret: nil) { server, _, _, relay, _ in
            let events = server.peerEvents
            await relay.endStreamsToAcceptor()
            #expect(await Self.nextDisconnection(events) == .peerClosed)
            #expect(server.statistics.endsWithoutSealedClose == 0)
        }
    }
}
