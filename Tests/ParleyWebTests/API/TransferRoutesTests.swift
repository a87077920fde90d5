import Foundation
import HummingbirdTesting
import NIOCore
import Testing

@Suite("Export and import routes")
struct TransferRoutesTests {
    @Test("export is a JSON-lines download named after the session; an unknown session is a 404 before any byte")
    func export() async throws {
        let web = WebTestServer()
        try await web.test { client in
            try await client.execute(uri: "/api/sessions/1/export", method: .get) { response throws in
                #expect(response.headers[.contentType] == "application/x-ndjson")
                #expect(response.headers[.contentDisposition] == "attachment; filename=\"parley-session-1.jsonl\"")
                #expect(String(buffer: response.body) == "{\"header\":1}\n{\"entry\":10}\n")
            }
            try await client.execute(uri: "/api/sessions/9/export", method: .get) { #expect($0.status == .notFound) }
        }
    }

    @Test("import hands the importer whole lines: 201 for a new session, 200 for one already in the history, 400 for an empty file")
    func importHistory() async throws {
        let web = WebTestServer()
        try await web.test { client in
            let cookie = try await web.cookie(client)
            try await client.execute(uri: "/api/import", method: .post, headers: [.cookie: cookie], body: ByteBuffer(string: "{\"header\":5}\n{\"entry\":1}")) { response throws in
                #expect(response.status == .created)
                #expect(try WebTestServer.json(response.body)["alreadyInHistory"] as? Bool == false)
            }
            #expect(web.backend.changes.withLock { $0.imported } == ["{\"header\":5}", "{\"entry\":1}"])
            try await client.execute(uri: "/api/import", method: .post, headers: [.cookie: cookie], body: ByteBuffer(string: "{\"header\":1}\n")) { response throws in
                #expect(response.status == .ok)
                #expect(try WebTestServer.json(response.body)["alreadyInHistory"] as? Bool == true)
            }
            try await client.execute(uri: "/api/import", method: .post, headers: [.cookie: cookie]) { #expect($0.status == .badRequest) }
        }
    }
}
