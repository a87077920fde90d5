import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import ParleyDebugger
import ParleyDrawer
import Synchronization
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
                    data: {"change":"started","session":{"appName":"Listr","bytes":0,"ended":null,"entryCount":0,"host":null,"id":3,"imported":false,"kind":"parley","live":true,"logCount":0,"peerID":"p","spanCount":0,"started":"2025-11-24T16:00:00.000Z"}}

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
        let text = String(buffer: try WebEvent.sessionEnded(ended).serverSentEvent())
        #expect(text.hasPrefix("event: session\ndata: {\"change\":\"ended\",\"session\":{"))
        #expect(text.contains("\"live\":false"))
        #expect(text.hasSuffix("}\n\n"))
    }

    @Test("stored log records and spans are one `telemetry` event: the counts, and the items in time order as the timeline lists them; past the cap, the counts alone")
    func telemetry() throws {
        let text = String(buffer: try WebEvent.telemetry(WebTelemetry(session: 1, logs: FakeBackend.logs, spans: FakeBackend.spans)).serverSentEvent())
        #expect(text.hasPrefix("event: telemetry\ndata: "))
        #expect(text.hasSuffix("}\n\n"))
        let data = try #require(text.split(separator: "\n").first { $0.hasPrefix("data: ") }?.dropFirst(6))
        let event = try #require(try JSONSerialization.jsonObject(with: Data(data.utf8)) as? [String: Any])
        #expect(event["session"] as? Int == 1)
        #expect(event["logCount"] as? Int == 3)
        #expect(event["spanCount"] as? Int == 2)
        let items = try #require(event["items"] as? [[String: Any]])
        #expect(TimelineRoutesTests.keys(items) == ["log:3", "span:1", "span:2", "log:1", "log:2"])
        #expect(items[3]["time"] as? String == "1764000010500000123")

        let many = (0...WebTelemetry.itemsSentLive).map { StoredLogRecord(id: Int64($0), session: 1, record: FakeBackend.logs[0].record) }
        let flood = String(buffer: try WebEvent.telemetry(WebTelemetry(session: 1, logs: many, spans: [])).serverSentEvent())
        #expect(flood == "event: telemetry\ndata: {\"items\":null,\"logCount\":201,\"session\":1,\"spanCount\":0}\n\n")
    }

    /// A feed over events the test sends, counting how often it subscribed.
    final class Source: Sendable {
        let events: AsyncStream<WebEvent>
        let send: AsyncStream<WebEvent>.Continuation
        let subscriptions = Mutex(0)

        init() {
            (events, send) = AsyncStream.makeStream(of: WebEvent.self)
        }

        func feed(_ limits: LiveFeed.Limits = LiveFeed.Limits()) -> LiveFeed {
            LiveFeed(limits: limits) { [self] in
                subscriptions.withLock { $0 += 1 }
                return events
            }
        }
    }

    static func event(_ index: Int) -> WebEvent { .sessionDeleted(id: Int64(index)) }

    @Test("pages share one subscription; a page that stops reading is ended once its backlog is full, and the others get every event")
    func slowPageIsEnded() async throws {
        let source = Source()
        let feed = source.feed(LiveFeed.Limits(pages: 4, backlogEvents: 10, backlogBytes: 1 << 20))
        let reader = try #require(feed.open())
        let stalled = try #require(feed.open())
        for index in 0..<50 {
            source.send.yield(Self.event(index))
            // Waits for the feed to hand the event over: no timing involved.
            #expect(await reader.next() == (try Self.event(index).serverSentEvent()))
        }
        #expect(source.subscriptions.withLock { $0 } == 1)
        // The stalled page was ended at its 11th event, and what waited for it was dropped.
        #expect(await stalled.next() == nil)
        #expect(feed.count == 1)
        source.send.finish()
        #expect(await reader.next() == nil)
        #expect(feed.count == 0)
    }

    @Test("a page's backlog is bounded in bytes too")
    func backlogInBytes() async throws {
        let source = Source()
        let feed = source.feed(LiveFeed.Limits(pages: 4, backlogEvents: 1000, backlogBytes: 200))
        let reader = try #require(feed.open())
        let stalled = try #require(feed.open())
        let big = WebEvent.drawer(AppDrawer(peer: .init(id: "p", name: String(repeating: "n", count: 150)), items: []))
        for _ in 0..<2 {
            source.send.yield(big)
            #expect(await reader.next() == (try big.serverSentEvent()))
        }
        #expect(await stalled.next() == nil)
        source.send.finish()
    }

    @Test("past the cap of pages a new one is refused (503 on the route); one that leaves makes room")
    func capOfPages() async throws {
        let source = Source()
        let feed = source.feed(LiveFeed.Limits(pages: 2))
        let first = try #require(feed.open())
        #expect(feed.open() != nil)
        #expect(feed.open() == nil)
        feed.remove(first)
        #expect(feed.open() != nil)

        let router = Router()
        router.add(middleware: ProblemMiddleware { _ in nil })
        router.addRoutes(LiveRoutes<BasicRequestContext>(feed: feed, keepAliveInterval: .seconds(3600)).routes, atPath: "/api")
        try await Application(router: router).test(.router) { client in
            try await client.execute(uri: "/api/events", method: .get) { response throws in
                #expect(response.status == .serviceUnavailable)
                #expect(try WebTestServer.problem(response).title == "Too many live pages")
            }
        }
        source.send.finish()
    }

    @Test("closing the feed (the server stopping) ends every page after what it had, and refuses new ones")
    func closedByTheServer() async throws {
        let source = Source()
        let feed = source.feed()
        let page = try #require(feed.open())
        source.send.yield(.peersChanged)
        #expect(await page.next() == (try WebEvent.peersChanged.serverSentEvent()))
        feed.close()
        #expect(await page.next() == nil)
        #expect(feed.count == 0)
        #expect(feed.open() == nil)
    }
}
