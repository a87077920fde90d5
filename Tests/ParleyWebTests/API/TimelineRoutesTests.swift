import Foundation
import Hummingbird
import HummingbirdTesting
import NIOFoundationCompat
import ParleyDebugger
import ParleyTelemetry
import Testing

@testable import ParleyWeb

@Suite("Timeline routes")
struct TimelineRoutesTests {
    static func items(_ body: [String: Any]) throws -> [[String: Any]] { try #require(body["items"] as? [[String: Any]]) }
    /// `kind:id` of each item, as the fake's timeline comment lists them.
    static func keys(_ items: [[String: Any]]) -> [String] {
        items.map { item in
            let kind = item["kind"] as? String ?? "?"
            let fields = item["item"] as? [String: Any] ?? [:]
            return "\(kind):\((kind == "state" ? fields["sequence"] : fields["id"]) as? Int ?? -1)"
        }
    }

    @Test("states, log records and spans merged by time; every time in nanoseconds as a decimal string, exact past 2^53; paged by offset and limit")
    func mergedByTime() async throws {
        let web = WebTestServer()
        try await web.test { client in
            try await client.execute(uri: "/api/sessions/1/timeline", method: .get) { response throws in
                #expect(response.status == .ok)
                #expect(response.headers[.cacheControl] == "no-store")
                let page = try WebTestServer.json(response.body)
                let items = try Self.items(page)
                #expect(Self.keys(items) == ["log:3", "state:10", "span:1", "span:2", "log:1", "state:11", "log:2", "state:12"])
                #expect(page["total"] as? Int == 8)
                #expect(page["offset"] as? Int == 0)
                #expect(items.map { $0["time"] as? String } == [
                    "1764000009000000000", "1764000010000000000", "1764000010200000000", "1764000010300000000", "1764000010500000123",
                    "1764000011000000000", "1764000011500000000", "1764000012000000000",
                ])
                let log = try #require(items[4]["item"] as? [String: Any])
                let record = try #require(log["record"] as? [String: Any])
                #expect(record["timeUnixNano"] as? String == "1764000010500000123")
                #expect(record["severity"] as? String == "info")
                #expect(record["traceId"] as? String == FakeBackend.traceID.hex)
                // Every key, even empty: a page reads them without checking.
                let quiet = try #require((items[0]["item"] as? [String: Any])?["record"] as? [String: Any])
                #expect(quiet["traceId"] is NSNull)
                #expect(quiet["metadata"] is [String: Any])
                #expect(quiet["file"] as? String == "")
                let span = try #require((items[3]["item"] as? [String: Any])?["span"] as? [String: Any])
                #expect(span["startTimeUnixNano"] as? String == "1764000010300000000")
                #expect(span["endTimeUnixNano"] as? String == "1764000010600000000")
                #expect((span["status"] as? [String: Any])?["message"] as? String == "timeout")
                #expect((span["events"] as? [[String: Any]])?.first?["timeUnixNano"] as? String == "1764000010400000000")
                #expect(span["parentSpanId"] as? String == FakeBackend.rootSpanID.hex)
                let state = try #require(items[1]["item"] as? [String: Any])
                #expect(state["action"] as? String == "add(10)")
                #expect(state["time"] as? String == "2025-11-24T16:00:10.000Z")
            }
            try await client.execute(uri: "/api/sessions/1/timeline?offset=2&limit=3", method: .get) { response throws in
                let page = try WebTestServer.json(response.body)
                #expect(Self.keys(try Self.items(page)) == ["span:1", "span:2", "log:1"])
                #expect(page["total"] as? Int == 8)
                #expect(page["offset"] as? Int == 2)
            }
            try await client.execute(uri: "/api/sessions/2/timeline", method: .get) { response throws in
                #expect(try Self.items(try WebTestServer.json(response.body)).isEmpty)
            }
            try await client.execute(uri: "/api/sessions/9/timeline", method: .get) { response throws in
                #expect(try WebTestServer.problem(response) == .init(status: 404, title: "Not found", detail: "no session"))
            }
        }
    }

    @Test("what the web writes of a log record and a span reads back as the same records (UnixNanos reads decimal strings)")
    func roundTrip() throws {
        let decoder = JSONDecoder()
        for log in FakeBackend.logs {
            #expect(try decoder.decode(StoredLogRecord.self, from: Data(buffer: try WebJSON.encode(WebLogRecord(stored: log)))) == log)
        }
        for span in FakeBackend.spans {
            #expect(try decoder.decode(StoredSpan.self, from: Data(buffer: try WebJSON.encode(WebSpan(stored: span)))) == span)
        }
    }

    @Test("kinds, level, label glob, text and since reach the backend as one query; each narrows the list")
    func filters() async throws {
        let web = WebTestServer()
        try await web.test { client in
            try await client.execute(
                uri: "/api/sessions/1/timeline?kinds=log,span&level=warning&label=app.*&q=slow&since=1764000010000000000&offset=0&limit=50",
                method: .get
            ) { response throws in
                #expect(Self.keys(try Self.items(try WebTestServer.json(response.body))) == ["log:2"])
            }
            #expect(web.backend.changes.withLock { $0.lastTimelineQuery } == TimelineQuery(
                session: 1, kinds: [.log, .span], minimumSeverity: .warning, label: "app.*", text: "slow", since: UnixNanos(1_764_000_010_000_000_000),
                offset: 0, limit: 50))
            for (query, expected) in [
                ("kinds=state", ["state:10", "state:11", "state:12"]),
                ("kinds=span", ["span:1", "span:2"]),
                ("level=info", ["state:10", "span:1", "span:2", "log:1", "state:11", "log:2", "state:12"]),
                ("label=db.*", ["state:10", "span:2", "state:11", "state:12"]),
                ("label=db.*&kinds=log,span", ["span:2"]),
                ("q=items", ["span:1", "log:1"]),
                ("since=2025-11-24T16:00:11.000Z", ["state:11", "log:2", "state:12"]),
                ("since=2025-11-24T16:00:11Z&kinds=log", ["log:2"]),
            ] {
                try await client.execute(uri: "/api/sessions/1/timeline?\(query)", method: .get) { response throws in
                    #expect(Self.keys(try Self.items(try WebTestServer.json(response.body))) == expected, "\(query)")
                }
            }
            try await client.execute(uri: "/api/sessions/1/timeline?limit=5000", method: .get) { _ in }
            #expect(web.backend.changes.withLock { $0.lastTimelineQuery?.limit } == TimelineRoutes<BasicRequestContext>.pageLimit)
        }
    }

    @Test("a malformed filter is a 400 that says what is expected")
    func badFilters() async throws {
        let web = WebTestServer()
        let long = String(repeating: "a", count: 1025)
        try await web.test { client in
            for (query, detail) in [
                ("kinds=state,logs", "kinds lists state, log and span (comma-separated), not \"logs\""),
                ("level=loud", "level is one of trace, debug, info, notice, warning, error, critical, not \"loud\""),
                ("since=yesterday", "since is nanoseconds since 1970 or an ISO 8601 time such as 2026-11-25T17:10:51.035Z, not \"yesterday\""),
                ("label=\(long)", "label is at most 1024 bytes; this one has 1025"),
                ("q=\(long)", "q is at most 1024 bytes; this one has 1025"),
                ("offset=first", "offset must be a whole number, not \"first\""),
            ] {
                try await client.execute(uri: "/api/sessions/1/timeline?\(query)", method: .get) { response throws in
                    #expect(try WebTestServer.problem(response) == .init(status: 400, title: "Bad request", detail: detail), "\(query.prefix(40))")
                }
            }
        }
    }

    @Test("an item's position among the selected items, and whether the filter selects it; 404 outside the session, 400 without an item")
    func position() async throws {
        let web = WebTestServer()
        try await web.test { client in
            for (query, offset, matches) in [
                ("kind=log&id=2", 6, true), ("kind=span&id=2", 3, true), ("kind=state&id=12", 7, true),
                ("kind=log&id=2&kinds=state", 2, false), ("kind=log&id=1&level=warning", 3, false), ("kind=log&id=2&level=warning", 4, true),
            ] {
                try await client.execute(uri: "/api/sessions/1/timeline/position?\(query)", method: .get) { response throws in
                    let position = try WebTestServer.json(response.body)
                    #expect(position["offset"] as? Int == offset, "\(query)")
                    #expect(position["matches"] as? Bool == matches, "\(query)")
                }
            }
            try await client.execute(uri: "/api/sessions/1/timeline/position?kind=log&id=99", method: .get) { response throws in
                #expect(try WebTestServer.problem(response).detail == "there is no log record 99 in session 1")
            }
            try await client.execute(uri: "/api/sessions/2/timeline/position?kind=span&id=1", method: .get) { #expect($0.status == .notFound) }
            try await client.execute(uri: "/api/sessions/1/timeline/position?id=1", method: .get) { #expect($0.status == .badRequest) }
            try await client.execute(uri: "/api/sessions/1/timeline/position?kind=metric&id=1", method: .get) { response throws in
                #expect(try WebTestServer.problem(response).detail == "kind is state, log or span, not \"metric\"")
            }
        }
    }

    @Test("the state at a moment: the newest recorded at or before it (null before the first); the time in nanoseconds or ISO 8601")
    func stateAt() async throws {
        let web = WebTestServer()
        try await web.test { client in
            for (time, sequence) in [
                ("1764000010500000123", 10), ("1764000010999999999", 10), ("1764000011000000000", 11), ("2025-11-24T16:00:30Z", 12),
            ] {
                try await client.execute(uri: "/api/sessions/1/state-at?time=\(time)", method: .get) { response throws in
                    let entry = try #require(try WebTestServer.json(response.body)["entry"] as? [String: Any])
                    #expect(entry["sequence"] as? Int == sequence, "\(time)")
                }
            }
            try await client.execute(uri: "/api/sessions/1/state-at?time=1764000009999999999", method: .get) { response throws in
                #expect(response.status == .ok)
                #expect(try WebTestServer.json(response.body)["entry"] is NSNull)
            }
            try await client.execute(uri: "/api/sessions/1/state-at", method: .get) { #expect($0.status == .badRequest) }
            try await client.execute(uri: "/api/sessions/9/state-at?time=1", method: .get) { #expect($0.status == .notFound) }
        }
    }

    @Test("one log record and one span by id; an unknown one is the backend's 404; an id that is no number a 404 too")
    func records() async throws {
        let web = WebTestServer()
        try await web.test { client in
            try await client.execute(uri: "/api/logs/2", method: .get) { response throws in
                let log = try WebTestServer.json(response.body)
                #expect(log["id"] as? Int == 2)
                #expect(log["session"] as? Int == 1)
                let record = try #require(log["record"] as? [String: Any])
                #expect(record["message"] as? String == "slow write")
                #expect((record["metadata"] as? [String: Any])?["authorization"] as? String == "[redacted]")
            }
            try await client.execute(uri: "/api/spans/1", method: .get) { response throws in
                let span = try #require(try WebTestServer.json(response.body)["span"] as? [String: Any])
                #expect(span["name"] as? String == "GET /items")
                #expect(span["kind"] as? String == "server")
                #expect(span["parentSpanId"] is NSNull)
                #expect((span["attributes"] as? [String: Any])?["http.status_code"] as? Int == 200)
            }
            try await client.execute(uri: "/api/logs/9", method: .get) { response throws in
                #expect(try WebTestServer.problem(response) == .init(status: 404, title: "Not found", detail: "no log record"))
            }
            try await client.execute(uri: "/api/spans/9", method: .get) { #expect($0.status == .notFound) }
            try await client.execute(uri: "/api/logs/first", method: .get) { response throws in
                #expect(try WebTestServer.problem(response).detail == "a log record's id is a number")
            }
        }
    }

    @Test("with an access token, the timeline's routes need it like every other route")
    func access() async throws {
        let web = WebTestServer(token: "s3cret-token-of-this-test")
        try await web.test { client in
            for path in ["/api/sessions/1/timeline", "/api/sessions/1/state-at?time=1", "/api/logs/1", "/api/spans/1", "/api/traces", "/api/traces/4bf9"] {
                try await client.execute(uri: path, method: .get) { #expect($0.status == .unauthorized, "\(path)") }
                try await client.execute(uri: path, method: .get, headers: [.authorization: "Bearer s3cret-token-of-this-test"]) {
                    #expect($0.status == .ok, "\(path)")
                }
            }
        }
    }
}
