import Foundation
import HTTPTypes
import HummingbirdTesting
import Testing

@testable import ParleyWeb

@Suite("Access rules")
struct WebAccessTests {
    @Test("reading is open on loopback; a change needs the cookie of the sign-in link, from our own origin, or the sign-in token as a bearer: 403 otherwise")
    func changesNeedTheCookie() async throws {
        let web = WebTestServer()
        try await web.test { client in
            try await client.execute(uri: "/api/sessions", method: .get) { #expect($0.status == .ok) }
            try await client.execute(uri: "/api/sessions/1", method: .delete) { response throws in
                #expect(response.status == .forbidden)
                #expect(try WebTestServer.problem(response).title == "Read-only")
            }
            // Opening the page gives no cookie; a wrong token gets none either.
            try await client.execute(uri: "/", method: .get) { #expect($0.headers[.setCookie] == nil) }
            try await client.execute(uri: "/?token=guessed", method: .get) { response throws in
                #expect(response.status == .unauthorized && response.headers[.setCookie] == nil)
            }
            try await client.execute(uri: "/api/sessions/2", method: .delete, headers: [.authorization: "Bearer guessed"]) {
                #expect($0.status == .forbidden)
            }
            try await client.execute(
                uri: "/api/sessions/2", method: .delete, headers: [.authorization: "Bearer " + web.server.configuration.signInToken]
            ) {
                #expect($0.status == .conflict)  // past the access check: the fake's session 2 is still recording
            }
            let cookie = try await web.cookie(client)
            try await client.execute(uri: "/api/sessions/1", method: .delete, headers: [.cookie: cookie, .origin: "http://evil.example"]) {
                #expect($0.status == .forbidden)
            }
            try await client.execute(uri: "/api/sessions/1", method: .delete, headers: [.cookie: "parley_web=guessed", .origin: "http://localhost"]) {
                #expect($0.status == .forbidden)
            }
            try await client.execute(uri: "/api/sessions/1", method: .delete, headers: [.cookie: cookie, .origin: "http://localhost"]) {
                #expect($0.status == .noContent)
            }
        }
        #expect(web.backend.changes.withLock { $0.deleted } == [1])
    }

    @Test("the page can ask whether it may change anything: not without the sign-in link's cookie or the token")
    func access() async throws {
        let web = WebTestServer()
        try await web.test { client in
            try await client.execute(uri: "/api/access", method: .get) { response throws in
                #expect(response.status == .ok && String(buffer: response.body) == #"{"canChange":false}"#)
            }
            let cookie = try await web.cookie(client)
            try await client.execute(uri: "/api/access", method: .get, headers: [.cookie: cookie]) {
                #expect(String(buffer: $0.body) == #"{"canChange":true}"#)
            }
            try await client.execute(uri: "/api/access", method: .get, headers: [.authorization: "Bearer " + web.server.configuration.signInToken]) {
                #expect(String(buffer: $0.body) == #"{"canChange":true}"#)
            }
        }
    }

    @Test("with a token every request needs it (401 without), as a bearer or traded once by ?token= for the cookie")
    func token() async throws {
        let token = String(repeating: "cd", count: 32)
        let web = WebTestServer(token: token)
        try await web.test { client in
            try await client.execute(uri: "/api/peers", method: .get) { response throws in
                #expect(response.status == .unauthorized)
                #expect(try WebTestServer.problem(response).title == "Unauthorized")
            }
            try await client.execute(uri: "/api/peers", method: .get, headers: [.authorization: "Bearer " + token]) { #expect($0.status == .ok) }
            try await client.execute(uri: "/api/peers", method: .get, headers: [.authorization: "Bearer " + token.uppercased()]) {
                #expect($0.status == .unauthorized)
            }
            let cookie = try await client.execute(uri: "/peers?token=\(token)", method: .get) { response throws in
                #expect(response.status == .seeOther)
                #expect(response.headers[.location] == "/peers")
                return try #require(response.headers[.setCookie]?.split(separator: ";").first.map(String.init))
            }
            try await client.execute(uri: "/api/peers", method: .get, headers: [.cookie: cookie]) { #expect($0.status == .ok) }
            try await client.execute(uri: "/?token=wrong", method: .get) { #expect($0.status == .unauthorized) }
        }
    }

    @Test("every answer, a problem included, carries the security headers; HEAD answers as GET without a body")
    func headers() async throws {
        let web = WebTestServer()
        try await web.test { client in
            for uri in ["/api/peers", "/api/sessions/9", "/no/such/page"] {
                try await client.execute(uri: uri, method: .get) { response throws in
                    #expect(response.headers[.contentSecurityPolicy]?.contains("script-src 'self'") == true, "\(uri)")
                    #expect(response.headers[.xContentTypeOptions] == "nosniff", "\(uri)")
                }
            }
            try await client.execute(uri: "/api/peers", method: .head) { response throws in
                #expect(response.status == .ok)
                #expect(response.headers[.contentType] == "application/json")
                #expect(response.body.readableBytes == 0)
            }
        }
    }

    @Test("a token compares equal only to itself, whatever the length")
    func constantTime() {
        #expect(constantTimeEqual("abc", "abc"))
        #expect(!constantTimeEqual("abc", "abd"))
        #expect(!constantTimeEqual("abc", "ab"))
        #expect(!constantTimeEqual("", "a"))
        #expect(constantTimeEqual("", ""))
    }

    @Test("a refusal tells the person in the browser where to get the sign-in URL in the configured words; the module's own name no command")
    func signInURLHint() async throws {
        let token = String(repeating: "ef", count: 32)
        for (hint, expected) in [(nil, "the URL that carries the web debugger's sign-in token"), ("the URL that tool web prints", "the URL that tool web prints")] {
            try await WebTestServer(token: token, signInURLHint: hint).test { client in
                try await client.execute(uri: "/api/peers", method: .get) { response throws in
                    #expect(try WebTestServer.problem(response).detail == "a valid access token is required: open \(expected)")
                }
            }
            try await WebTestServer(signInURLHint: hint).test { client in
                try await client.execute(uri: "/api/sessions/1", method: .delete) { response throws in
                    let detail = try WebTestServer.problem(response).detail
                    #expect(detail.hasPrefix("changing anything needs the web debugger opened from \(expected),"), "\(detail)")
                    #expect(!detail.contains("parleyctl"), "\(detail)")
                }
            }
        }
    }

    @Test("a configuration beyond loopback without a token says why it cannot be used, naming no program's settings")
    func tokenRequiredBeyondLoopback() {
        let problem = WebConfiguration(host: "0.0.0.0", port: 7207).problem
        #expect(problem == .openBeyondLoopback(host: "0.0.0.0"))
        #expect(problem?.description.contains("listen on 127.0.0.1, or give it an access token") == true, "\(String(describing: problem))")
        #expect(problem?.description.contains("webTokenFile") == false && problem?.description.contains("parleyctl") == false)
        #expect(WebConfiguration(host: "127.0.0.1", port: 70000).problem == .notAPort(70000))
        #expect(WebConfiguration(host: "0.0.0.0", port: 7207, token: "t").problem == nil)
        #expect(WebConfiguration(host: "127.0.0.1", port: 7207).problem == nil)
        #expect(WebConfiguration(host: "::1", port: 7207).problem == nil)
    }
}
