import Hummingbird
import NIOCore

/// `GET /api/events`: the backend's live events as server-sent events (`text/event-stream`), each as `event:` and
/// `data:` lines, a comment line when idle; through the ``LiveFeed``, which bounds each page's backlog and the
/// number of pages (503 past it).
struct LiveRoutes<Context: RequestContext>: Sendable {
    let feed: LiveFeed
    /// Between comment lines on an idle live stream, so that proxies and browsers keep it open.
    let keepAliveInterval: Duration

    var routes: RouteCollection<Context> {
        let routes = RouteCollection(context: Context.self)
        routes.get("events") { _, _ in try stream() }
        return routes
    }

    private func stream() throws -> Response {
        guard let page = feed.open() else {
            throw WebProblem(
                .serviceUnavailable, "Too many live pages",
                detail: "\(feed.limits.pages) pages are following parleyd live already; close one, or reload later"
            )
        }
        var headers = HTTPFields()
        headers[.contentType] = "text/event-stream"
        headers[.cacheControl] = "no-store"
        let (feed, keepAliveInterval) = (self.feed, self.keepAliveInterval)
        return Response(status: .ok, headers: headers, body: ResponseBody { writer in
            defer { feed.remove(page) }
            page.offer(ByteBuffer(string: ": parley live events\n\n"))
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    while !Task.isCancelled {
                        try await Task.sleep(for: keepAliveInterval)
                        guard page.offer(ByteBuffer(string: ": keep-alive\n\n")) else { return }
                    }
                }
                // Ends when the feed ends the page (the backend stops, the server stops, or the page fell too far
                // behind) or the page goes away (the write throws).
                while let bytes = await page.next() { try await writer.write(bytes) }
                group.cancelAll()
            }
            try await writer.finish(nil)
        })
    }
}

extension WebEvent {
    /// The event as server-sent event lines: `event: NAME`, `data: JSON`, a blank line.
    func serverSentEvent() throws -> ByteBuffer {
        let data: ByteBuffer =
            switch self {
            case .entry(let entry): try WebJSON.encode(entry)
            case .telemetry(let telemetry): try WebJSON.encode(TelemetryArrival(telemetry))
            case .sessionStarted(let session): try WebJSON.encode(SessionChange(change: "started", session: session))
            case .sessionEnded(let session): try WebJSON.encode(SessionChange(change: "ended", session: session))
            case .sessionDeleted(let id): try WebJSON.encode(SessionDeleted(session: .init(id: id)))
            case .peersChanged: ByteBuffer(string: "{}")
            case .drawer(let drawer): try WebJSON.encode(drawer)
            }
        var buffer = ByteBuffer(string: "event: \(name.rawValue)\ndata: ")
        var payload = data
        buffer.writeBuffer(&payload)
        buffer.writeString("\n\n")
        return buffer
    }
}

/// `telemetry`'s data: `{"session", "logCount", "spanCount", "items"}`, the items as the timeline lists them (in
/// time order), or `null` past ``WebTelemetry/itemsSentLive``.
struct TelemetryArrival: Encodable {
    let telemetry: WebTelemetry

    init(_ telemetry: WebTelemetry) { self.telemetry = telemetry }

    private enum CodingKeys: String, CodingKey { case session, logCount, spanCount, items }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(telemetry.session, forKey: .session)
        try container.encode(telemetry.logs.count, forKey: .logCount)
        try container.encode(telemetry.spans.count, forKey: .spanCount)
        guard telemetry.logs.count + telemetry.spans.count <= WebTelemetry.itemsSentLive else {
            try container.encodeNil(forKey: .items)
            return
        }
        let items = (telemetry.logs.map { WebTimelineItem(item: .log($0)) } + telemetry.spans.map { WebTimelineItem(item: .span($0)) })
        // Stable: records of one time keep the order the app sent them in.
        let ordered = items.enumerated().sorted { ($0.element.time, $0.offset) < ($1.element.time, $1.offset) }.map(\.element)
        try container.encode(ordered, forKey: .items)
    }
}

extension WebEvent {
    /// The names pages listen for, listed in Assets/routes.js (``WebPageManifest``).
    enum Name: String, Sendable, Decodable, CaseIterable {
        case entry, telemetry, session, peers, drawer
    }

    var name: Name {
        switch self {
        case .entry: .entry
        case .telemetry: .telemetry
        case .sessionStarted, .sessionEnded, .sessionDeleted: .session
        case .peersChanged: .peers
        case .drawer: .drawer
        }
    }
}
