import Foundation
import HummingbirdTesting
import Logging
import NIOCore
import Parley
import ParleyDebugger
import ParleyHistory
import ParleyTestSupport
import ServiceLifecycleTestKit
import Testing

@testable import Hummingbird
@testable import ParleyDaemon
@testable import ParleyWeb

/// The web debugger's API over parleyd's real debugger service and history store (SQLite in a scratch
/// directory): through Hummingbird's router test client, and over real sockets where the socket matters (the
/// Host check, the live stream).
@Suite("Web debugger API", .timeLimit(.minutes(2)))
struct WebDebuggerTests {
    /// parleyd's parts behind the web server, not listening on the network.
    final class Fixture: Sendable {
        let directory: URL
        let store: HistoryStore
        let debugger: DebuggerService
        let backend: DaemonWebBackend
        let server: WebServer

        init(token: String? = nil, host: String = "127.0.0.1") async throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("parley-web-\(UUID().uuidString.prefix(8))")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            var configuration = DaemonConfiguration.defaults(environment: ["HOME": directory.path])
            configuration.discovery = false
            configuration.actionFilters = ["noisy": .pattern("hover*")]
            let logger = Logger(label: "web-test")
            let transceiver = Transceiver(configuration: configuration.transceiverConfiguration(logger: logger))
            store = try await HistoryStore.open(directory: directory.path, logger: logger)
            debugger = DebuggerService(
                transceiver: transceiver, store: store, filters: configuration.actionFilters, diffMaxBytes: 1 << 20, logger: logger)
            let router = ControlRouter(transceiver: transceiver, configuration: configuration, logger: logger)
            let metrics = DaemonMetrics(transceiver: transceiver, store: store)
            let drawer = DrawerService(transceiver: transceiver, dataDirectory: directory.path, events: debugger.events, logger: logger)
            let book = try DeviceBook(
                directory: directory.path, identity: try DeviceIdentity.loadOrCreate(in: directory.path, name: "web-test"), logger: logger)
            backend = DaemonWebBackend(
                debugger: debugger, drawer: drawer, router: router, metrics: metrics,
                devices: DeviceService(book: book, transceiver: transceiver), authenticatesPeers: false)
            server = WebServer(
                configuration: WebConfiguration(host: host, port: 0, token: token),
                backend: backend, metricsFactory: metrics.factory, keepAliveInterval: .seconds(3600), logger: logger
            )
        }

        /// A session of `count` entries `add(0)`, `add(1)`, … with states `{"count": i, "items": [...]}`; every
        /// third action is `hover`. Ended unless `open`.
        @discardableResult
        func record(app: String = "Listr", count: Int, open: Bool = false, screenshot: [UInt8] = []) async throws -> (session: Int64, sequences: [Int64]) {
            let session = try await store.beginSession(peerID: UUID().uuidString, appName: app, kind: .parley, host: "10.0.0.7").id
            var sequences: [Int64] = []
            for index in 0..<count {
                let state = #"{"count": \#(index), "items": [\#((0..<index).map { "\"item \($0)\"" }.joined(separator: ","))], "title": "<b>list</b>"}"#
                let action = index % 3 == 2 ? "hover(\(index))" : "add(\(index))"
                let entry = try await store.append(
                    StateRecord(action: action, state: ByteBuffer(string: state), screenshot: ByteBuffer(bytes: screenshot)), to: session)
                sequences.append(entry.sequence)
            }
            if !open { try await store.endSession(session) }
            return (session, sequences)
        }

        func test<Value>(_ body: @Sendable (any TestClientProtocol) async throws -> Value) async throws -> Value {
            try await Application(responder: server.makeResponder()).test(.router, body)
        }

        /// The session cookie of the sign-in link `parleyctl web` prints.
        func cookie(_ client: some TestClientProtocol) async throws -> String {
            try await client.execute(uri: "/?token=\(server.configuration.signInToken)", method: .get) { response in
                try #require(response.headers[.setCookie]?.split(separator: ";").first.map(String.init))
            }
        }

        deinit { try? FileManager.default.removeItem(at: directory) }
    }

    static func json(_ body: ByteBuffer) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(buffer: body)) as? [String: Any])
    }

    @Test("sessions list newest first with host, entry count and the live marker; one session by id; 404 as a problem document")
    func sessions() async throws {
        let fixture = try await Fixture()
        let first = try await fixture.record(app: "First", count: 2)
        let second = try await fixture.record(app: "Second", count: 3)
        try await fixture.test { client in
            try await client.execute(uri: "/api/sessions", method: .get) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentType] == "application/json")
                let sessions = try #require(try Self.json(response.body)["sessions"] as? [[String: Any]])
                #expect(sessions.map { $0["id"] as? Int64 } == [second.session, first.session])
                #expect(sessions.first?["host"] as? String == "10.0.0.7")
                #expect(sessions.first?["entryCount"] as? Int == 3)
                #expect(sessions.first?["live"] as? Bool == false)
            }
            try await client.execute(uri: "/api/sessions?limit=1", method: .get) { response in
                let page = try Self.json(response.body)
                #expect((page["sessions"] as? [Any])?.count == 1)
                #expect(page["nextAfter"] as? Int64 == second.session)
            }
            try await client.execute(uri: "/api/sessions/\(first.session)", method: .get) { response in
                let answer = try Self.json(response.body)
                #expect(answer["appName"] as? String == "First")
            }
            try await client.execute(uri: "/api/sessions/999", method: .get) { response in
                #expect(response.status == .notFound)
                #expect(response.headers[.contentType] == "application/problem+json")
                let problem = try Self.json(response.body)
                #expect(problem["status"] as? Int == 404)
                #expect((problem["detail"] as? String)?.contains("no session 999") == true)
            }
        }
    }

    @Test("entries page by offset and limit without blobs, filter by name or pattern (show or hide), and locate an entry's page")
    func entries() async throws {
        let fixture = try await Fixture()
        let recorded = try await fixture.record(count: 9)
        try await fixture.test { client in
            try await client.execute(uri: "/api/sessions/\(recorded.session)/entries?offset=2&limit=3", method: .get) { response in
                let page = try Self.json(response.body)
                #expect(page["total"] as? Int == 9)
                let entries = try #require(page["entries"] as? [[String: Any]])
                #expect(entries.map { $0["sequence"] as? Int64 } == Array(recorded.sequences[2..<5]))
                #expect(entries.allSatisfy { $0["state"] == nil && $0["screenshot"] == nil })
            }
            try await client.execute(uri: "/api/sessions/\(recorded.session)/entries?filter=noisy&mode=hide", method: .get) { response in
                // noisy is hover*: hidden, the six add(…) entries remain.
                let answer = try Self.json(response.body)
                #expect(answer["total"] as? Int == 6)
            }
            try await client.execute(uri: "/api/sessions/\(recorded.session)/entries?pattern=hover*&mode=hide", method: .get) { response in
                let entries = try #require(try Self.json(response.body)["entries"] as? [[String: Any]])
                #expect(entries.count == 6)
                #expect(entries.allSatisfy { ($0["action"] as? String)?.hasPrefix("add") == true })
            }
            try await client.execute(uri: "/api/sessions/\(recorded.session)/entries?filter=nope", method: .get) { response in
                #expect(response.status == .badRequest)
                #expect(String(buffer: response.body).contains("noisy"))
            }
            try await client.execute(
                uri: "/api/sessions/\(recorded.session)/position?sequence=\(recorded.sequences[7])&pattern=hover*&mode=hide", method: .get
            ) { response in
                // add(0) add(1) add(3) add(4) come before add(6)... entries 0,1,3,4,6 are adds; sequence index 7 is add(7).
                let answer = try Self.json(response.body)
                #expect(answer["offset"] as? Int == 5)
                #expect(answer["matches"] as? Bool == true)
            }
            try await client.execute(
                uri: "/api/sessions/\(recorded.session)/position?sequence=\(recorded.sequences[2])&pattern=hover*&mode=hide", method: .get
            ) { response in
                // hover(2) is hidden: where it would be (after add(0) and add(1)), and that it is not shown.
                let answer = try Self.json(response.body)
                #expect(answer["offset"] as? Int == 2)
                #expect(answer["matches"] as? Bool == false)
            }
            try await client.execute(uri: "/api/sessions/\(recorded.session)/position?sequence=999999", method: .get) { response in
                #expect(response.status == .notFound)
            }
        }
    }

    @Test("an entry with its neighbours; its state byte for byte; its screenshot as image/png, cacheable; none is a 404")
    func entryStateAndScreenshot() async throws {
        let fixture = try await Fixture()
        let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 1, 2, 3]
        let recorded = try await fixture.record(count: 3, screenshot: png)
        let bare = try await fixture.record(count: 1)
        try await fixture.test { client in
            try await client.execute(uri: "/api/entries/\(recorded.sequences[1])", method: .get) { response in
                let answer = try Self.json(response.body)
                #expect(answer["previous"] as? Int64 == recorded.sequences[0])
                #expect(answer["next"] as? Int64 == recorded.sequences[2])
                #expect((answer["entry"] as? [String: Any])?["action"] as? String == "add(1)")
            }
            try await client.execute(uri: "/api/entries/\(recorded.sequences[0])", method: .get) { response in
                let answer = try Self.json(response.body)
                #expect(answer["previous"] is NSNull)
            }
            try await client.execute(uri: "/api/entries/\(recorded.sequences[1])/state", method: .get) { response in
                #expect(String(buffer: response.body) == #"{"count": 1, "items": ["item 0"], "title": "<b>list</b>"}"#)
                #expect(response.headers[.contentType] == "application/json")
                #expect(response.headers[.cacheControl] == "private, no-cache")
            }
            // Kept by the browser and revalidated by its tag, which names the history as well as the entry.
            let stateURI = "/api/entries/\(recorded.sequences[1])/state"
            let tag = try await client.execute(uri: stateURI, method: .get) { try #require($0.headers[.eTag]) }
            #expect(tag.contains(fixture.backend.historyIdentity))
            #expect(try await Fixture().backend.historyIdentity != fixture.backend.historyIdentity, "another data directory, another history")
            try await client.execute(uri: stateURI, method: .get, headers: [.ifNoneMatch: tag]) { response in
                #expect(response.status == .notModified)
                #expect(response.body.readableBytes == 0)
            }
            try await client.execute(uri: stateURI, method: .get, headers: [.ifNoneMatch: "\"another-history-state-\(recorded.sequences[1])\""]) {
                #expect($0.status == .ok)
            }
            try await client.execute(uri: "/api/entries/\(recorded.sequences[1])/screenshot", method: .get) { response in
                #expect(response.headers[.contentType] == "image/png")
                #expect(Array(buffer: response.body) == png)
            }
            try await client.execute(uri: "/api/entries/\(bare.sequences[0])/screenshot", method: .get) { response in
                #expect(response.status == .notFound)
            }
        }
    }

    @Test("the diff is parleyd's: changed, added and countChanged paths with exact JSON text; the first entry alone is a 400")
    func diff() async throws {
        let fixture = try await Fixture()
        let recorded = try await fixture.record(count: 3)
        try await fixture.test { client in
            try await client.execute(uri: "/api/diff?to=\(recorded.sequences[2])", method: .get) { response in
                let changes = try #require(try Self.json(response.body)["changes"] as? [[String: Any]])
                let byPath = Dictionary(changes.map { (($0["pathText"] as? String) ?? "", $0) }) { first, _ in first }
                #expect(byPath["count"]?["kind"] as? String == "changed")
                #expect(byPath["count"]?["old"] as? String == "1")
                #expect(byPath["count"]?["new"] as? String == "2")
                #expect(byPath["items"]?["kind"] as? String == "countChanged")
                #expect(byPath["items[1]"]?["kind"] as? String == "added")
                #expect(byPath["items[1]"]?["new"] as? String == #""item 1""#)
                #expect(byPath["title"] == nil)
            }
            let fixedPair = "/api/diff?from=\(recorded.sequences[0])&to=\(recorded.sequences[2])"
            let tag = try await client.execute(uri: fixedPair, method: .get) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.cacheControl] == "private, no-cache")
                #expect((try Self.json(response.body)["changes"] as? [Any])?.isEmpty == false)
                return try #require(response.headers[.eTag])
            }
            try await client.execute(uri: fixedPair, method: .get, headers: [.ifNoneMatch: tag]) { #expect($0.status == .notModified) }
            try await client.execute(uri: "/api/diff?to=\(recorded.sequences[2])", method: .get) { response in
                #expect(response.headers[.cacheControl] == "no-store", "the predecessor may change: never kept")
            }
            try await client.execute(uri: "/api/diff?to=\(recorded.sequences[0])", method: .get) { response in
                #expect(response.status == .badRequest)
            }
        }
    }

    @Test("changing requests need the sign-in link's cookie: without it 403 and nothing deleted; with it an ended session goes, a live one is a 409")
    func deleteNeedsTheCookie() async throws {
        let fixture = try await Fixture()
        let ended = try await fixture.record(count: 2)
        let open = try await fixture.record(count: 1, open: true)
        try await fixture.test { client in
            try await client.execute(uri: "/api/sessions/\(ended.session)", method: .delete) { response in
                #expect(response.status == .forbidden)
            }
            #expect(try await fixture.store.session(ended.session).entryCount == 2)
            try await client.execute(uri: "/", method: .get) { response in
                #expect(response.headers[.contentSecurityPolicy]?.contains("script-src 'self'") == true)
                #expect(response.headers[.setCookie] == nil)
            }
            let cookie = try await fixture.cookie(client)
            let withCookie: HTTPFields = [.cookie: cookie, .origin: "http://localhost"]
            try await client.execute(uri: "/api/sessions/\(ended.session)", method: .delete, headers: withCookie) { response in
                #expect(response.status == .noContent)
            }
            await #expect(throws: HistoryStoreError.self) { _ = try await fixture.store.session(ended.session) }
            try await client.execute(uri: "/api/sessions/\(open.session)", method: .delete, headers: withCookie) { response in
                #expect(response.status == .conflict)
            }
            // A page of another site carrying the cookie (it cannot, SameSite=Strict, but if it did): refused.
            let crossSite: HTTPFields = [.cookie: cookie, .origin: "http://evil.example"]
            try await client.execute(uri: "/api/sessions/\(open.session)", method: .delete, headers: crossSite) { response in
                #expect(response.status == .forbidden)
            }
        }
    }

    @Test("export downloads the session as JSON lines; importing it back is idempotent")
    func exportAndImport() async throws {
        let fixture = try await Fixture()
        let recorded = try await fixture.record(count: 4)
        try await fixture.test { client in
            let file = try await client.execute(uri: "/api/sessions/\(recorded.session)/export", method: .get) { response in
                #expect(response.headers[.contentDisposition]?.contains("attachment") == true)
                #expect(String(buffer: response.body).split(separator: "\n").count == 5)
                return response.body
            }
            let cookie = try await fixture.cookie(client)
            try await client.execute(uri: "/api/sessions/\(recorded.session)", method: .delete, headers: [.cookie: cookie]) { #expect($0.status == .noContent) }
            let imported = try await client.execute(uri: "/api/import", method: .post, headers: [.cookie: cookie], body: file) { response in
                #expect(response.status == .created)
                let session = try #require(try Self.json(response.body)["session"] as? [String: Any])
                #expect(session["entryCount"] as? Int == 4)
                return try #require(session["id"] as? Int64)
            }
            try await client.execute(uri: "/api/import", method: .post, headers: [.cookie: cookie], body: file) { response in
                let answer = try Self.json(response.body)
                #expect(answer["alreadyInHistory"] as? Bool == true)
                #expect((answer["session"] as? [String: Any])?["id"] as? Int64 == imported)
            }
            try await client.execute(uri: "/api/import", method: .post, headers: [.cookie: cookie], body: ByteBuffer(string: "not an export\n")) { response in
                #expect(response.status == .badRequest)
            }
            #expect(try await fixture.store.sessions().count == 1)
        }
    }

    @Test("replay with no app connected is a 409 that says so")
    func replayWithNoApp() async throws {
        let fixture = try await Fixture()
        let recorded = try await fixture.record(count: 1)
        try await fixture.test { client in
            let cookie = try await fixture.cookie(client)
            try await client.execute(uri: "/api/entries/\(recorded.sequences[0])/replay", method: .post, headers: [.cookie: cookie], body: ByteBuffer(string: "{\"all\": true}")) { response in
                #expect(response.status == .conflict)
                #expect(String(buffer: response.body).contains("no debugger app is connected"))
            }
        }
    }

    @Test("metrics in Prometheus text: connections, messages, drops, peers, history entries and bytes, web requests")
    func metrics() async throws {
        let fixture = try await Fixture()
        try await fixture.record(count: 2)
        try await fixture.test { client in
            _ = try await client.execute(uri: "/api/sessions", method: .get)
            try await client.execute(uri: "/metrics", method: .get) { response in
                let text = String(buffer: response.body)
                #expect(response.headers[.contentType]?.hasPrefix("text/plain; version=0.0.4") == true)
                for name in [
                    "parley_messages_total", "parley_payload_bytes_total", "parley_dropped_messages_total", "parley_handshake_failures_total",
                    "parley_peers", "parley_connections", "parley_closed_connections_total", "parley_web_requests_total", "parley_history_bytes",
                ] {
                    #expect(text.contains("# TYPE \(name) "), "\(name) missing")
                }
                #expect(text.contains("parley_history_entries 2"))
                // The fixture writes its states straight into the store: no peer, no connection, no message yet;
                // the one request before this scrape answered 200.
                #expect(text.contains(#"parley_messages_total{direction="in"} 0"#), "\(text)")
                #expect(text.contains(#"parley_connections{kind="tcp"} 0"#), "\(text)")
                #expect(text.contains(#"parley_closed_connections_total{reason="no-sealed-close"} 0"#), "\(text)")
                #expect(text.contains(#"parley_web_requests_total{status="2xx"} 1"#), "\(text)")
            }
        }
    }

    // MARK: - Over real sockets (curl, Debian's package)

    /// Runs the fixture's server on a free loopback port while `body` runs.
    static func serving(_ fixture: Fixture, _ body: (Int) async throws -> Void) async throws {
        let server = Task { try await fixture.server.run() }
        defer { server.cancel() }
        let port = try #require(await fixture.server.waitUntilListening())
        try await body(port)
    }

    @Test("a request naming a host parleyd does not answer to gets 421 (DNS rebinding); loopback names and IP addresses are answered")
    func hostCheck() async throws {
        let fixture = try await Fixture()
        try await Self.serving(fixture) { port in
            let url = "http://127.0.0.1:\(port)/api/sessions"
            let rebound = try await ChildProcess.run("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-H", "Host: evil.example:\(port)", url])
            #expect(rebound.stdout == "421")
            for name in ["192.0.2.7.evil.example", "[evil.example]", "1.2.3"] {
                let refused = try await ChildProcess.run("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-H", "Host: \(name):\(port)", url])
                #expect(refused.stdout == "421", "\(name)")
            }
            for host in ["localhost:\(port)", "127.0.0.1:\(port)", "[::1]:\(port)", "192.0.2.7:\(port)", "[fe80::1%25eth0]:\(port)", "[2001:db8::7]"] {
                let answered = try await ChildProcess.run("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-H", "Host: \(host)", url])
                #expect(answered.stdout == "200", "\(host)")
            }
        }
    }

    @Test("the live stream carries each event the daemon publishes, as server-sent events, and ends when parleyd stops")
    func liveStream() async throws {
        let fixture = try await Fixture()
        try await testGracefulShutdown { trigger in
            let server = Task { try await fixture.server.run() }
            let port = try #require(await fixture.server.waitUntilListening())
            let curl = try ChildProcess("/usr/bin/curl", ["-sN", "http://127.0.0.1:\(port)/api/events"])
            _ = try await curl.waitFor { $0.contains(": parley live events") ? true : nil }
            let entry = EntrySummary(sequence: 42, session: 7, time: Date(timeIntervalSince1970: 1_764_000_000), action: "add(\"<b>\")", stateSize: 10, screenshotSize: 0)
            fixture.debugger.events.publish(.entry(entry))
            fixture.debugger.events.publish(.peersChanged)
            let text = try await curl.waitFor { $0.contains("event: peers") ? $0 : nil }
            #expect(text.contains("event: entry\ndata: {"))
            #expect(text.contains(#""sequence":42"#))
            #expect(text.contains(#""time":"2025-11-24T16:00:00.000Z""#))
            #expect(text.contains("event: peers\ndata: {}\n\n"))
            // parleyd stopping ends every open stream, so that no open page holds up the shutdown.
            trigger.triggerGracefulShutdown()
            #expect(try await curl.exitStatus(within: .seconds(10)) == 0)
            try await server.value
        }
    }
}
