import Foundation
import HummingbirdTesting
import NIOCore
import Testing

@Suite("Replay routes")
struct ReplayRoutesTests {
    @Test("replay to a named app answers where it went; the backend's refusal is its 409; a body that is not JSON is a 400")
    func replay() async throws {
        let web = WebTestServer()
        try await web.test { client in
            let cookie = try await web.cookie(client)
            try await client.execute(uri: "/api/entries/10/replay", method: .post, headers: [.cookie: cookie], body: ByteBuffer(string: #"{"to": "Notes"}"#)) { response throws in
                #expect(response.status == .ok)
                #expect((try WebTestServer.json(response.body)["sentTo"] as? [[String: Any]])?.first?["name"] as? String == "Notes")
            }
            try await client.execute(uri: "/api/entries/10/replay", method: .post, headers: [.cookie: cookie]) { response throws in
                #expect(response.status == .conflict)
                #expect(try WebTestServer.problem(response) == .init(status: 409, title: "No app to replay to", detail: "no debugger app is connected"))
            }
            try await client.execute(uri: "/api/entries/10/replay", method: .post, headers: [.cookie: cookie], body: ByteBuffer(string: "all")) { response throws in
                #expect(response.status == .badRequest)
            }
        }
        #expect(web.backend.changes.withLock { $0.replayed.map(\.to) } == ["Notes"])
    }
}
