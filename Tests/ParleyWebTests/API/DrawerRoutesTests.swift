import Foundation
import HummingbirdTesting
import NIOCore
import ParleyDrawer
import Testing

@Suite("Drawer routes")
struct DrawerRoutesTests {
    @Test("drawers listed; a value set in the app; a body without a value is a 400; an unknown app a 404; an error the backend does not describe a 500")
    func drawers() async throws {
        let web = WebTestServer()
        try await web.test { client in
            try await client.execute(uri: "/api/drawers", method: .get) { response throws in
                let drawers = try #require(try WebTestServer.json(response.body)["drawers"] as? [[String: Any]])
                #expect((drawers.first?["peer"] as? [String: Any])?["name"] as? String == "Notes")
            }
            let cookie = try await web.cookie(client)
            try await client.execute(uri: "/api/drawers/Notes/items/dark", method: .post, headers: [.cookie: cookie], body: ByteBuffer(string: #"{"value": true}"#)) { response throws in
                #expect(response.status == .ok)
                #expect(try WebTestServer.json(response.body)["value"] as? Bool == true)
            }
            #expect(web.backend.changes.withLock { $0.drawerValues.map(\.value) } == [.bool(true)])
            try await client.execute(uri: "/api/drawers/Notes/items/dark", method: .post, headers: [.cookie: cookie], body: ByteBuffer(string: "{}")) { response throws in
                #expect(response.status == .badRequest)
                #expect(try WebTestServer.problem(response).detail.contains("{\"value\": …}"))
            }
            try await client.execute(uri: "/api/drawers/Gone/items/dark/invoke", method: .post, headers: [.cookie: cookie]) { #expect($0.status == .notFound) }
            try await client.execute(uri: "/api/drawers/Notes/items/reset/invoke", method: .post, headers: [.cookie: cookie]) { response throws in
                #expect(try WebTestServer.json(response.body)["message"] as? String == "done")
            }
            try await client.execute(uri: "/api/drawers/Gone/items/explode/invoke", method: .post, headers: [.cookie: cookie]) { response throws in
                #expect(response.status == .internalServerError)
                #expect(try WebTestServer.problem(response).title == "Internal error")
            }
        }
    }
}
