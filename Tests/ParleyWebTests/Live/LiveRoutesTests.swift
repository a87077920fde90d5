import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import ParleyDebugger
import ParleyDrawer
import Testing

@testable import ParleyWeb

@Suite("Live stream")
struct LiveRoutesTests {
    static let session = WebSession(
        summary: SessionSummary(id: 3, peerID: "p", appName: "Listr", kind: .parley, started: Date(timeIntervalSince1970: 1_764_000_000)), live: true)

    @Test("each backend event as server-sent event lines, byte for byte, after the opening comment; the stream ends with the backend's")
    func events() async throws {
        let entry = EntrySummary(sequence: 42, session: 7, time: Date(timeIntervalSince1970: 1_764_000_000), action: "add", stateSize: 10, screenshotSize: 0)
        let web = WebTestServer(backend: FakeBackend(events: [
            .entry(entry), .sessionStarted(Self.session), .sessionDeleted(id: 3), .peersChanged,
            .drawer(AppDrawer(peer: .init(id: "p", name: "Listr"), items: [])),
        ]))
        try await web.test { client in
            try await client.execute(uri: "/api/events", method: .get) { response throws in
                #expect(response.headers[.contentType] == "text/event-stream")
                #expect(response.headers[.cacheControl] == "no-store")
                let expected = """
                    : parley live events

                    event: entry
                    data: {"action":"add","screenshotSize":0,"sequence":42,"session":7,"stateSize":10,"time":"2025-11-24T16:00:00.000Z"}

                    event: session
                    data: {"change":"started","session":{"appName":"Listr","bytes":0,"ended":null,"entryCount":0,"host":null,"id":3,"imported":false,"kind":"parley","live":true,"peerID":"p","started":"2025-11-24T16:00:00.000Z"}}

                    event: session
                    data: {"change":"deleted","session":{"id":3}}

                    event: peers
                    data: {}

                    event: drawer
                    data: {"items":[],"peer":{"id":"p","name":"Listr"}}


                    """
                #expect(String(buffer: response.body) == expected)
            }
        }
    }

    @Test("a session that ends is sent as an `ended` change")
    func sessionEnded() throws {
        var ended = Self.session
        ended.live = false
        let text = String(buffer: try LiveRoutes<BasicRequestContext>.serverSentEvent(.sessionEnded(ended)))
        #expect(text.hasPrefix("event: session\ndata: {\"change\":\"ended\",\"session\":{"))
        #expect(text.contains("\"live\":false"))
        #expect(text.hasSuffix("}\n\n"))
    }

    @Test("closing the open streams (the server stopping) ends a stream whose backend goes quiet, after what it had sent")
    func closedByTheServer() async throws {
        let openStreams = OpenLiveStreams()
        let backend = FakeBackend(events: [.peersChanged], endsAfterEvents: false, afterEvents: { openStreams.close() })
        let router = Router()
        router.addRoutes(LiveRoutes<BasicRequestContext>(backend: backend, openStreams: openStreams, keepAliveInterval: .seconds(3600)).routes, atPath: "/api")
        try await Application(router: router).test(.router) { client in
            try await client.execute(uri: "/api/events", method: .get) { response throws in
                #expect(String(buffer: response.body) == ": parley live events\n\nevent: peers\ndata: {}\n\n")
            }
        }
        #expect(openStreams.count == 0)
    }

    @Test("a stream asked for once the server has closed its streams ends at once")
    func openedAfterClose() async throws {
        let openStreams = OpenLiveStreams()
        openStreams.close()
        let (stream, _) = openStreams.open()
        var lines = stream.makeAsyncIterator()
        #expect(await lines.next() == nil)
        #expect(openStreams.count == 0)
    }
}
