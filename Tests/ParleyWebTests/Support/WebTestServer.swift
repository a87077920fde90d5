import Foundation
import HummingbirdTesting
import Logging
import Metrics
import NIOCore
import NIOFoundationCompat
import Testing

@testable import Hummingbird
@testable import ParleyWeb

/// A web server over a ``FakeBackend``, driven through Hummingbird's router test client (no socket).
struct WebTestServer {
    let backend: FakeBackend
    let server: WebServer

    /// - Parameter signInURLHint: ``WebConfiguration/signInURLHint``; nil for the web module's own.
    init(backend: FakeBackend = FakeBackend(), token: String? = nil, signInURLHint: String? = nil) {
        self.backend = backend
        var configuration = WebConfiguration(host: "127.0.0.1", port: 0, token: token)
        if let signInURLHint { configuration.signInURLHint = signInURLHint }
        server = WebServer(
            configuration: configuration, backend: backend, metricsFactory: NOOPMetricsHandler.instance,
            keepAliveInterval: .seconds(3600), logger: Logger(label: "parley-web-test"))
    }

    func test<Value>(_ body: @Sendable (any TestClientProtocol) async throws -> Value) async throws -> Value {
        try await Application(responder: server.makeResponder()).test(.router, body)
    }

    /// The session cookie a browser gets by opening the sign-in URL (the one with the sign-in token).
    func cookie(_ client: some TestClientProtocol) async throws -> String {
        try await client.execute(uri: "/?token=\(server.configuration.signInToken)", method: .get) { response throws in
            #expect(response.status == .seeOther)
            return try #require(response.headers[.setCookie]?.split(separator: ";").first.map(String.init))
        }
    }

    static func json(_ body: ByteBuffer) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(buffer: body)) as? [String: Any])
    }

    struct Problem: Equatable {
        var status: Int
        var title: String
        var detail: String
    }

    /// The problem document of an answer, checked to be one.
    static func problem(_ response: TestResponse) throws -> Problem {
        #expect(response.headers[.contentType] == "application/problem+json")
        let document = try json(response.body)
        #expect(document["type"] as? String == "about:blank")
        return Problem(
            status: try #require(document["status"] as? Int), title: try #require(document["title"] as? String),
            detail: try #require(document["detail"] as? String))
    }
}
