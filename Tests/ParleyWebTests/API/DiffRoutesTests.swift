import Foundation
import HummingbirdTesting
import Testing

@Suite("Diff routes")
struct DiffRoutesTests {
    @Test("a diff against the entry before, uncached; of two fixed entries, cacheable; a missing ?to= is a 400, an unknown entry a 404")
    func diff() async throws {
        let web = WebTestServer()
        try await web.test { client in
            try await client.execute(uri: "/api/diff?to=12", method: .get) { response throws in
                #expect(response.headers[.cacheControl] == "no-store")
                let diff = try WebTestServer.json(response.body)
                #expect((diff["from"] as? [String: Any])?["sequence"] as? Int == 11)
                let changes = try #require(diff["changes"] as? [[String: Any]])
                #expect(Set(changes.compactMap { $0["pathText"] as? String }) == ["count", "title"])
            }
            try await client.execute(uri: "/api/diff?from=10&to=12", method: .get) { response throws in
                #expect(response.headers[.eTag] == "\"fake-history-diff-10-12\"")
            }
            try await client.execute(uri: "/api/diff", method: .get) { #expect($0.status == .badRequest) }
            try await client.execute(uri: "/api/diff?to=99", method: .get) { #expect($0.status == .notFound) }
        }
    }
}
