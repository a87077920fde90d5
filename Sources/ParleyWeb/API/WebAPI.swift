import Foundation
import Hummingbird
import NIOCore
import ParleyDebugger
import ParleyDrawer
import ParleyJSON

/// The JSON API of docs/web.md, over a ``WebDebuggerBackend``.
struct WebAPI<Context: RequestContext> {
    let backend: any WebDebuggerBackend
    let events: LiveEvents
    /// Between comment lines on an idle live stream, so that proxies and browsers keep it open.
    let keepAliveInterval: Duration

    static var sessionPageLimit: Int { 500 }
    static var entryPageLimit: Int { 1000 }

    func register(on router: Router<Context>) {
        let api = router.group("api")
        api.get("sessions") { request, _ in try await sessions(request) }
        api.get("sessions/:id") { _, context in try json(try await backend.session(try id(context))) }
        api.delete("sessions/:id") { _, context in
            try await backend.deleteSession(try id(context))
            return Response(status: .noContent)
        }
        api.get("sessions/:id/entries") { request, context in try await entries(request, session: try id(context)) }
        api.get("sessions/:id/position") { request, context in try await position(request, session: try id(context)) }
        api.get("sessions/:id/export") { _, context in try await export(session: try id(context)) }
        api.get("entries/:seq") { _, context in try json(try await backend.entry(try sequence(context))) }
        api.get("entries/:seq/state") { request, context in
            let sequence = try sequence(context)
            return try await stored(request, tag: "state-\(sequence)", contentType: "application/json") {
                try await backend.state(of: sequence)
            }
        }
        api.get("entries/:seq/screenshot") { request, context in
            let sequence = try sequence(context)
            return try await stored(request, tag: "screenshot-\(sequence)", contentType: "image/png") {
                let png = try await backend.screenshot(of: sequence)
                guard png.readableBytes > 0 else { throw WebProblem.notFound("entry \(sequence) has no screenshot") }
                return png
            }
        }
        api.post("entries/:seq/replay") { request, context in try await replay(request, sequence: try sequence(context)) }
        api.get("diff") { request, _ in try await diff(request) }
        api.post("import") { request, _ in try await importHistory(request) }
        api.get("peers") { _, _ in try json(PeerList(peers: await backend.peers())) }
        api.get("filters") { _, _ in
            let filters = backend.filters().sorted { $0.key < $1.key }.map { NamedFilter(name: $0.key, filter: $0.value) }
            return try json(FilterList(filters: filters))
        }
        api.get("events") { _, _ in liveStream() }
        api.get("drawers") { _, _ in try json(DrawerList(drawers: await backend.drawers())) }
        api.post("drawers/:peer/items/:item") { request, context in
            var request = request
            let body = try await request.collectBody(upTo: 64 << 10)
            guard let set = try? JSONDecoder().decode(SetBody.self, from: body) else {
                throw WebProblem.badRequest("the body must be {\"value\": …} with a boolean, a number or a string")
            }
            return try json(try await backend.setDrawerValue(
                app: context.parameters.get("peer") ?? "", item: context.parameters.get("item") ?? "", value: set.value))
        }
        api.post("drawers/:peer/items/:item/invoke") { _, context in
            try json(try await backend.invokeDrawerAction(app: context.parameters.get("peer") ?? "", item: context.parameters.get("item") ?? ""))
        }
        router.get("metrics") { _, _ in
            var headers = HTTPFields()
            headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
            headers[.cacheControl] = "no-store"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: await backend.metrics())))
        }
    }

    // MARK: - Handlers

    private func sessions(_ request: Request) async throws -> Response {
        let limit = try clamp(request.uri.queryParameters, "limit", default: 100, max: Self.sessionPageLimit)
        let before = try optionalInteger(request.uri.queryParameters, "after")
        // One more than the page, to know whether another follows.
        let found = try await backend.sessions(before: before, limit: limit + 1)
        let page = Array(found.prefix(limit))
        return try json(SessionPage(sessions: page, nextAfter: found.count > limit ? page.last?.summary.id : nil))
    }

    private func entries(_ request: Request, session: Int64) async throws -> Response {
        let query = request.uri.queryParameters
        let offset = try clamp(query, "offset", default: 0, max: Int.max, min: 0)
        let limit = try clamp(query, "limit", default: 200, max: Self.entryPageLimit)
        let found = try await backend.entries(session: session, filter: try filter(query), offset: offset, limit: limit)
        return try json(EntryPage(entries: found.entries, total: found.total, offset: offset))
    }

    private func position(_ request: Request, session: Int64) async throws -> Response {
        let query = request.uri.queryParameters
        guard let sequence = try optionalInteger(query, "sequence") else { throw WebProblem.badRequest("give the entry: ?sequence=N") }
        guard let found = try await backend.position(of: sequence, session: session, filter: try filter(query)) else {
            throw WebProblem.notFound("entry \(sequence) is not an entry of session \(session)")
        }
        return try json(Position(offset: found.offset, matches: found.matches))
    }

    private func diff(_ request: Request) async throws -> Response {
        let query = request.uri.queryParameters
        guard let to = try optionalInteger(query, "to") else { throw WebProblem.badRequest("give the entry to compare: ?to=N (and ?from=M)") }
        // With `from` given both entries are fixed, so is their diff; without, retention may change the predecessor.
        guard let from = try optionalInteger(query, "from") else {
            let result = try await backend.diff(from: nil, to: to)
            return try json(DiffAnswer(from: result.from, to: result.to, changes: result.diff.changes.map(DiffChange.init)))
        }
        return try await stored(request, tag: "diff-\(from)-\(to)", contentType: "application/json") {
            let result = try await backend.diff(from: from, to: to)
            return try WebJSON.encode(DiffAnswer(from: result.from, to: result.to, changes: result.diff.changes.map(DiffChange.init)))
        }
    }

    private func replay(_ request: Request, sequence: Int64) async throws -> Response {
        var request = request
        let body = try await request.collectBody(upTo: 64 << 10)
        let target: ReplayTarget
        if body.readableBytes == 0 {
            target = ReplayTarget()
        } else {
            do {
                target = try JSONDecoder().decode(ReplayTarget.self, from: body)
            } catch {
                throw WebProblem.badRequest("the body must be {} (the session's app), {\"to\": \"NAME-OR-ID\"} or {\"all\": true}")
            }
        }
        return try json(try await backend.replay(sequence, to: target.to, all: target.all ?? false))
    }

    private func export(session: Int64) async throws -> Response {
        // Before the answer starts: a missing session is a 404, not a truncated download.
        let summary = try await backend.session(session)
        var headers = HTTPFields()
        headers[.contentType] = "application/x-ndjson"
        headers[.contentDisposition] = "attachment; filename=\"parley-session-\(summary.summary.id).jsonl\""
        headers[.cacheControl] = "no-store"
        let backend = self.backend
        return Response(status: .ok, headers: headers, body: ResponseBody { writer in
            try await backend.export(session: session) { piece in try await writer.write(piece) }
            try await writer.finish(nil)
        })
    }

    private func importHistory(_ request: Request) async throws -> Response {
        let importer = backend.beginImport()
        // Whole lines to the importer; a line split across two pieces of the body waits for the rest.
        var pending = ByteBuffer()
        for try await piece in request.body {
            var piece = piece
            pending.writeBuffer(&piece)
            guard let lastNewline = pending.readableBytesView.lastIndex(of: UInt8(ascii: "\n")) else { continue }
            let lines = pending.readSlice(length: lastNewline - pending.readerIndex + 1)!
            try await importer.add(lines: lines)
            pending.discardReadBytes()
        }
        if pending.readableBytes > 0 { try await importer.add(lines: pending) }
        let (session, again) = try await importer.finish()
        return try json(ImportAnswer(session: session, alreadyInHistory: again), status: again ? .ok : .created)
    }

    /// `text/event-stream`: each event as `event:` and `data:` lines, a comment line when idle.
    private func liveStream() -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "text/event-stream"
        headers[.cacheControl] = "no-store"
        let events = self.events.subscribe()
        let keepAliveInterval = self.keepAliveInterval
        return Response(status: .ok, headers: headers, body: ResponseBody { writer in
            let (lines, output) = AsyncStream.makeStream(of: ByteBuffer.self)
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
                // Ends when the events end (parleyd stops, or this reader fell too far behind) or the page goes away
                // (the write throws).
                for await line in lines { try await writer.write(line) }
                group.cancelAll()
            }
            try await writer.finish(nil)
        })
    }

    static func serverSentEvent(_ event: WebEvent) throws -> ByteBuffer {
        let (name, data): (String, ByteBuffer) =
            switch event {
            case .entry(let entry): ("entry", try WebJSON.encode(entry))
            case .sessionStarted(let session): ("session", try WebJSON.encode(SessionChange(change: "started", session: session)))
            case .sessionEnded(let session): ("session", try WebJSON.encode(SessionChange(change: "ended", session: session)))
            case .sessionDeleted(let id): ("session", try WebJSON.encode(SessionDeleted(session: .init(id: id))))
            case .peersChanged: ("peers", ByteBuffer(string: "{}"))
            case .drawer(let drawer): ("drawer", try WebJSON.encode(drawer))
            }
        var buffer = ByteBuffer(string: "event: \(name)\ndata: ")
        var payload = data
        buffer.writeBuffer(&payload)
        buffer.writeString("\n\n")
        return buffer
    }

    // MARK: - Parameters

    private func id(_ context: Context) throws -> Int64 {
        guard let id = context.parameters.get("id", as: Int64.self) else { throw WebProblem.notFound("a session id is a number") }
        return id
    }

    private func sequence(_ context: Context) throws -> Int64 {
        guard let sequence = context.parameters.get("seq", as: Int64.self) else { throw WebProblem.notFound("an entry's sequence is a number") }
        return sequence
    }

    private func optionalInteger<Parameters: Collection>(_ query: Parameters, _ name: String) throws -> Int64?
    where Parameters.Element == (key: Substring, value: Substring) {
        guard let text = query.first(where: { $0.key == name })?.value, !text.isEmpty else { return nil }
        guard let value = Int64(text) else { throw WebProblem.badRequest("\(name) must be a whole number, not \"\(text)\"") }
        return value
    }

    private func clamp<Parameters: Collection>(_ query: Parameters, _ name: String, default: Int, max: Int, min: Int = 1) throws -> Int
    where Parameters.Element == (key: Substring, value: Substring) {
        guard let value = try optionalInteger(query, name) else { return `default` }
        return Swift.min(Swift.max(Int(clamping: value), min), max)
    }

    /// `filter=NAME`, `pattern=GLOB`, `mode=show|hide` as one filter: the entries the named filter and the pattern
    /// both match (either alone when one is given) are the ones shown, or with `mode=hide` the ones hidden.
    private func filter<Parameters: Collection>(_ query: Parameters) throws -> ActionTextFilter?
    where Parameters.Element == (key: Substring, value: Substring) {
        func value(_ name: String) -> String? { query.first { $0.key == name }.map { String($0.value) }.flatMap { $0.isEmpty ? nil : $0 } }
        let mode = value("mode") ?? "show"
        guard mode == "show" || mode == "hide" else { throw WebProblem.badRequest("mode is show or hide, not \"\(mode)\"") }
        var parts: [ActionTextFilter] = []
        if let name = value("filter") {
            guard backend.filters()[name] != nil else {
                let known = backend.filters().keys.sorted()
                throw WebProblem.badRequest(
                    "there is no filter named \"\(name)\"" + (known.isEmpty ? "; none is configured" : "; configured: \(known.joined(separator: ", "))"))
            }
            parts.append(.named(name))
        }
        if let pattern = value("pattern") {
            do {
                _ = try ActionGlob(pattern)
            } catch {
                throw WebProblem.badRequest("the pattern \"\(pattern)\" cannot be used: \(error)")
            }
            parts.append(.pattern(pattern))
        }
        let matched: ActionTextFilter
        switch parts.count {
        case 0: return nil
        case 1: matched = parts[0]
        // Both: neither may reject the entry.
        default: matched = .not(.anyOf(parts.map { .not($0) }))
        }
        return mode == "hide" ? .not(matched) : matched
    }

    // MARK: - Answers

    private func json(_ value: some Encodable, status: HTTPResponse.Status = .ok) throws -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        headers[.cacheControl] = "no-store"
        return Response(status: status, headers: headers, body: .init(byteBuffer: try WebJSON.encode(value)))
    }

    /// What never changes once stored (an entry's state and screenshot, the diff of two entries): a browser keeps
    /// it and asks again with its tag, answered 304 without reading the history. The tag names the history as
    /// well as the entry, because entry numbers start again in another data directory behind the same address.
    private func stored(
        _ request: Request, tag: String, contentType: String, _ body: () async throws -> ByteBuffer
    ) async throws -> Response {
        var headers = HTTPFields()
        headers[.eTag] = "\"\(backend.historyIdentity)-\(tag)\""
        headers[.cacheControl] = "private, no-cache"
        if let offered = request.headers[.ifNoneMatch], offered.split(separator: ",").contains(where: { $0.trimmingCharacters(in: .whitespaces) == headers[.eTag] }) {
            return Response(status: .notModified, headers: headers)
        }
        headers[.contentType] = contentType
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: try await body()))
    }

    struct SessionPage: Encodable {
        var sessions: [WebSession]
        var nextAfter: Int64?
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(sessions, forKey: .sessions)
            try container.encode(nextAfter, forKey: .nextAfter)
        }
        enum CodingKeys: String, CodingKey { case sessions, nextAfter }
    }

    struct EntryPage: Encodable {
        var entries: [EntrySummary]
        var total: Int
        var offset: Int
    }

    struct Position: Encodable {
        var offset: Int
        var matches: Bool
    }

    struct DiffAnswer: Encodable {
        var from: EntrySummary
        var to: EntrySummary
        var changes: [DiffChange]
    }

    /// A change with its path both as components and as text (`items[2].title`), for display and for matching
    /// tree nodes.
    struct DiffChange: Encodable {
        var path: StatePath
        var pathText: String
        var kind: StateDiff.Change.Kind
        var old: JSONFragment?
        var new: JSONFragment?
        var oldCount: Int?
        var newCount: Int?

        init(_ change: StateDiff.Change) {
            path = change.path
            pathText = change.path.description
            kind = change.kind
            old = change.old
            new = change.new
            oldCount = change.oldCount
            newCount = change.newCount
        }
    }

    struct ReplayTarget: Decodable {
        var to: String?
        var all: Bool?
    }

    struct ImportAnswer: Encodable {
        var session: SessionSummary
        var alreadyInHistory: Bool
    }

    struct PeerList: Encodable { var peers: [WebPeer] }

    struct DrawerList: Encodable { var drawers: [AppDrawer] }

    struct SetBody: Decodable { var value: DrawerValue }

    struct NamedFilter: Encodable {
        var name: String
        var filter: ActionTextFilter
    }

    struct FilterList: Encodable { var filters: [NamedFilter] }

    struct SessionChange: Encodable {
        var change: String
        var session: WebSession
    }

    struct SessionDeleted: Encodable {
        var change = "deleted"
        var session: ID
        struct ID: Encodable { var id: Int64 }
    }
}

