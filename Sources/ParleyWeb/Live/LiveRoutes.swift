import Hummingbird
import NIOCore

/// `GET /api/events`: the backend's live events as server-sent events (`text/event-stream`), each as `event:` and
/// `data:` lines, a comment line when idle.
struct LiveRoutes<Context: RequestContext>: Sendable {
    let backend: any WebDebuggerBackend
    let openStreams: OpenLiveStreams
    /// Between comment lines on an idle live stream, so that proxies and browsers keep it open.
    let keepAliveInterval: Duration

    var routes: RouteCollection<Context> {
        let routes = RouteCollection(context: Context.self)
        routes.get("events") { _, _ in stream() }
        return routes
    }

    private func stream() -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "text/event-stream"
        headers[.cacheControl] = "no-store"
        let events = backend.liveEvents()
        let openStreams = self.openStreams
        let keepAliveInterval = self.keepAliveInterval
        return Response(status: .ok, headers: headers, body: ResponseBody { writer in
            let (lines, output) = openStreams.open()
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    output.yield(ByteBuffer(string: ": parley live events\n\n"))
                    for await event in events { output.yield(try Self.serverSentEvent(event)) }
                    output.finish()
                }
                group.addTask {
                    while !Task.isCancelled {
                        try await Task.sleep(for: keepAliveInterval)
                        output.yield(ByteBuffer(string: ": keep-alive\n\n"))
                    }
                }
                // Ends when the events end (the backend stops, or this reader fell too far behind), the server
                // stops (it closes the open streams) or the page goes away (the write throws).
                for await line in lines { try await writer.write(line) }
                group.cancelAll()
            }
            try await writer.finish(nil)
        })
    }

    static func serverSentEvent(_ event: WebEvent) throws -> ByteBuffer {
        let data: ByteBuffer =
            switch event {
            case .entry(let entry): try WebJSON.encode(entry)
            case .sessionStarted(let session): try WebJSON.encode(SessionChange(change: "started", session: session))
            case .sessionEnded(let session): try WebJSON.encode(SessionChange(change: "ended", session: session))
            case .sessionDeleted(let id): try WebJSON.encode(SessionDeleted(session: .init(id: id)))
            case .peersChanged: ByteBuffer(string: "{}")
            case .drawer(let drawer): try WebJSON.encode(drawer)
            }
        var buffer = ByteBuffer(string: "event: \(event.name.rawValue)\ndata: ")
        var payload = data
        buffer.writeBuffer(&payload)
        buffer.writeString("\n\n")
        return buffer
    }
}

extension WebEvent {
    /// The names pages listen for, listed in Assets/routes.js (``WebPageManifest``).
    enum Name: String, Sendable, Decodable, CaseIterable {
        case entry, session, peers, drawer
    }

    var name: Name {
        switch self {
        case .entry: .entry
        case .sessionStarted, .sessionEnded, .sessionDeleted: .session
        case .peersChanged: .peers
        case .drawer: .drawer
        }
    }
}
