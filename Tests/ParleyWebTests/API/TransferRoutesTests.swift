import Foundation
import HummingbirdTesting
import NIOCore
import Testing

@testable import ParleyWeb
import Hummingbird

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

    @Test("an import past its size, or with a line past its length, is a 413; so is a replay body past 64 KiB")
    func tooLarge() async throws {
        let backend = FakeBackend()
        let router = Router()
        router.add(middleware: ProblemMiddleware { _ in nil })
        router.addRoutes(TransferRoutes<BasicRequestContext>(backend: backend, maximumImportBytes: 100, maximumLineBytes: 40).routes, atPath: "/api")
        router.addRoutes(ReplayRoutes<BasicRequestContext>(backend: backend).routes, atPath: "/api")
        try await Application(router: router).test(.router) { client in
            let long = ByteBuffer(string: String(repeating: "{\"entry\":1}\n", count: 10))
            try await client.execute(uri: "/api/import", method: .post, body: long) { response throws in
                #expect(response.status == .contentTooLarge)
                #expect(try WebTestServer.problem(response).title == "Too large")
            }
            try await client.execute(uri: "/api/import", method: .post, body: ByteBuffer(string: String(repeating: "x", count: 50))) { response throws in
                #expect(response.status == .contentTooLarge)
                #expect(try WebTestServer.problem(response).title == "Line too long")
            }
            let replay = ByteBuffer(string: #"{"to": ""# + String(repeating: "n", count: 70 << 10) + #""}"#)
            try await client.execute(uri: "/api/entries/10/replay", method: .post, body: replay) { response throws in
                #expect(response.status == .contentTooLarge)
            }
        }
    }

    @Test("a body in pieces is cut into whole lines, each byte searched once, however long the line")
    func linesInPieces() throws {
        var splitter = LineSplitter(maximumBodyBytes: 1 << 30, maximumLineBytes: 8 << 20)
        var lines: [String] = []
        let line = String(repeating: "a", count: 3 << 20)
        let body = Array("{\"header\":1}\n\(line)\nlast".utf8)
        for start in stride(from: 0, to: body.count, by: 4096) {
            if let run = try splitter.add(ByteBuffer(bytes: body[start..<min(start + 4096, body.count)])) {
                lines += String(buffer: run).split(separator: "\n").map(String.init)
            }
        }
        lines += splitter.rest().map { [String(buffer: $0)] } ?? []
        #expect(lines == ["{\"header\":1}", line, "last"])
        #expect(splitter.bytesSearched == body.count)
        var strict = LineSplitter(maximumBodyBytes: 10, maximumLineBytes: 4)
        #expect(throws: LineSplitter.Refusal.lineTooLong) { try strict.add(ByteBuffer(string: "abcde")) }
        #expect(throws: LineSplitter.Refusal.bodyTooLarge) { try strict.add(ByteBuffer(string: "12345\n678")) }
    }
}
