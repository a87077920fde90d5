import Foundation
import HummingbirdTesting
import ParleyDebugger
import Testing

@testable import ParleyWeb

@Suite("Session routes")
struct SessionRoutesTests {
    @Test("sessions list newest first with the live marker and a next page; one session; an unknown one is a 404 problem")
    func sessions() async throws {
        let web = WebTestServer()
        try await web.test { client in
            try await client.execute(uri: "/api/sessions?limit=1", method: .get) { response throws in
                #expect(response.status == .ok)
                #expect(response.headers[.cacheControl] == "no-store")
                let page = try WebTestServer.json(response.body)
                let sessions = try #require(page["sessions"] as? [[String: Any]])
                #expect(sessions.map { $0["id"] as? Int } == [2])
                #expect(sessions.first?["live"] as? Bool == true)
                // An open session with no known host: both keys are there, as null (docs/web.md).
                #expect(sessions.first?["ended"] is NSNull)
                #expect(sessions.first?["host"] is NSNull)
                #expect(page["nextAfter"] as? Int == 2)
            }
            try await client.execute(uri: "/api/sessions?after=2", method: .get) { response throws in
                let page = try WebTestServer.json(response.body)
                #expect((page["sessions"] as? [[String: Any]])?.map { $0["id"] as? Int } == [1])
                #expect(page["nextAfter"] is NSNull)
            }
            try await client.execute(uri: "/api/sessions/1", method: .get) { response throws in
                #expect(try WebTestServer.json(response.body)["appName"] as? String == "Listr")
            }
            try await client.execute(uri: "/api/sessions/9", method: .get) { response throws in
                #expect(response.status == .notFound)
                #expect(try WebTestServer.problem(response) == .init(status: 404, title: "Not found", detail: "no session"))
            }
            try await client.execute(uri: "/api/sessions/x", method: .get) { #expect($0.status == .notFound) }
            try await client.execute(uri: "/api/sessions?after=soon", method: .get) { response throws in
                #expect(response.status == .badRequest)
                #expect(try WebTestServer.problem(response).detail == "after must be a whole number, not \"soon\"")
            }
        }
    }

    @Test("entries page by offset and limit; a named filter or a pattern reaches the backend; an unknown filter is a 400 naming the configured ones")
    func entries() async throws {
        let web = WebTestServer()
        try await web.test { client in
            try await client.execute(uri: "/api/sessions/1/entries?offset=1&limit=1", method: .get) { response throws in
                let page = try WebTestServer.json(response.body)
                #expect((page["entries"] as? [[String: Any]])?.map { $0["sequence"] as? Int } == [11])
                #expect(page["total"] as? Int == 3)
                #expect(page["offset"] as? Int == 1)
            }
            try await client.execute(uri: "/api/sessions/1/entries?filter=noisy&mode=hide", method: .get) { #expect($0.status == .ok) }
            #expect(web.backend.changes.withLock { $0.lastFilter } == .not(.named("noisy")))
            try await client.execute(uri: "/api/sessions/1/entries?filter=quiet", method: .get) { response throws in
                #expect(response.status == .badRequest)
                #expect(try WebTestServer.problem(response).detail == "there is no filter named \"quiet\"; configured: noisy")
            }
            try await client.execute(uri: "/api/sessions/1/entries?mode=sideways", method: .get) { #expect($0.status == .badRequest) }
            try await client.execute(uri: "/api/sessions/9/entries", method: .get) { #expect($0.status == .notFound) }
            try await client.execute(uri: "/api/sessions/1/position?sequence=12", method: .get) { response throws in
                let position = try WebTestServer.json(response.body)
                #expect(position["offset"] as? Int == 2)
                #expect(position["matches"] as? Bool == true)
            }
            try await client.execute(uri: "/api/sessions/1/position?sequence=99", method: .get) { #expect($0.status == .notFound) }
            try await client.execute(uri: "/api/sessions/1/position", method: .get) { #expect($0.status == .badRequest) }
            try await client.execute(uri: "/api/filters", method: .get) { response throws in
                let filters = try #require(try WebTestServer.json(response.body)["filters"] as? [[String: Any]])
                #expect(filters.map { $0["name"] as? String } == ["noisy"])
            }
        }
    }

    @Test("deleting an ended session with the page's cookie is a 204; a live one a 409; an unknown one a 404")
    func delete() async throws {
        let web = WebTestServer()
        try await web.test { client in
            let cookie = try await web.cookie(client)
            try await client.execute(uri: "/api/sessions/1", method: .delete, headers: [.cookie: cookie]) { #expect($0.status == .noContent) }
            try await client.execute(uri: "/api/sessions/2", method: .delete, headers: [.cookie: cookie]) { response throws in
                #expect(response.status == .conflict)
                #expect(try WebTestServer.problem(response).title == "Conflict")
            }
            try await client.execute(uri: "/api/sessions/9", method: .delete, headers: [.cookie: cookie]) { #expect($0.status == .notFound) }
        }
        #expect(web.backend.changes.withLock { $0.deleted } == [1])
    }
}
