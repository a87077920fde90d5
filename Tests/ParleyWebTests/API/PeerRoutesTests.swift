import Foundation
import HummingbirdTesting
import Testing

@testable import ParleyWeb

@Suite("Peer and metrics routes")
struct PeerRoutesTests {
    @Test("peers as the backend lists them; metrics as Prometheus text, never cached")
    func peersAndMetrics() async throws {
        let web = WebTestServer()
        try await web.test { client in
            try await client.execute(uri: "/api/peers", method: .get) { response throws in
                let peers = try #require(try WebTestServer.json(response.body)["peers"] as? [[String: Any]])
                #expect(peers.map { $0["name"] as? String } == ["Notes"])
                #expect(peers.first?["connected"] as? Bool == true)
            }
            try await client.execute(uri: "/metrics", method: .get) { response throws in
                #expect(response.headers[.contentType] == "text/plain; version=0.0.4; charset=utf-8")
                #expect(response.headers[.cacheControl] == "no-store")
                #expect(String(buffer: response.body) == "# TYPE parley_fake gauge\nparley_fake 1\n")
            }
        }
    }

    @Test("a peer discovered but not connected has connectedAt null, not a missing key")
    func unconnectedPeerEncoding() throws {
        let peer = WebPeer(
            name: "Away", id: "p9", address: "10.0.0.9:7206", addresses: [], kind: "parley", connected: false, connectedAt: nil,
            accepts: [], authenticated: false, messagesIn: 0, messagesOut: 0)
        let object = try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(peer)) as? [String: Any])
        #expect(object["connectedAt"] is NSNull)
        #expect(object.count == 11)
    }
}
