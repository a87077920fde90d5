import Foundation
import HummingbirdTesting
import NIOCore
import Testing

@Suite("Entry routes")
struct EntryRoutesTests {
    @Test("an entry with its neighbours; its state byte for byte and its screenshot, each with a tag answered 304; none is a 404")
    func entry() async throws {
        let web = WebTestServer()
        try await web.test { client in
            try await client.execute(uri: "/api/entries/10", method: .get) { response throws in
                let entry = try WebTestServer.json(response.body)
                #expect(entry["previous"] is NSNull)
                #expect(entry["next"] as? Int == 11)
                #expect((entry["entry"] as? [String: Any])?["action"] as? String == "add(10)")
            }
            let tag = try await client.execute(uri: "/api/entries/12/state", method: .get) { response throws in
                #expect(String(buffer: response.body) == #"{"count": 2, "title": "x"}"#)
                #expect(response.headers[.contentType] == "application/json")
                #expect(response.headers[.cacheControl] == "private, no-cache")
                return try #require(response.headers[.eTag])
            }
            #expect(tag == "\"fake-history-state-12\"")
            try await client.execute(uri: "/api/entries/12/state", method: .get, headers: [.ifNoneMatch: "\"other\", \(tag)"]) { response throws in
                #expect(response.status == .notModified)
                #expect(response.body.readableBytes == 0)
            }
            try await client.execute(uri: "/api/entries/11/screenshot", method: .get) { response throws in
                #expect(response.headers[.contentType] == "image/png")
                #expect(Array(buffer: response.body) == web.backend.screenshot)
            }
            try await client.execute(uri: "/api/entries/10/screenshot", method: .get) { response throws in
                #expect(response.status == .notFound)
                #expect(try WebTestServer.problem(response).detail == "entry 10 has no screenshot")
            }
            try await client.execute(uri: "/api/entries/99", method: .get) { #expect($0.status == .notFound) }
            try await client.execute(uri: "/api/entries/99/state", method: .get) { #expect($0.status == .notFound) }
        }
    }
}
