import Hummingbird

/// `/api/sessions…`: the sessions newest first, page by page; one session; deleting an ended one; its entries
/// (filtered, paged) and where one of them falls in that list. `/api/filters`: the named filters the entries can
/// be filtered by.
struct SessionRoutes<Context: RequestContext>: Sendable {
    let backend: any WebDebuggerBackend

    static var sessionPageLimit: Int { 500 }
    static var entryPageLimit: Int { 1000 }

    var routes: RouteCollection<Context> {
        let routes = RouteCollection(context: Context.self)
        routes.get("sessions") { request, _ in try await list(request) }
        routes.get("sessions/:id") { _, context in try APIAnswer.json(try await backend.session(try RequestValues.sessionID(context.parameters))) }
        routes.delete("sessions/:id") { _, context in
            try await backend.deleteSession(try RequestValues.sessionID(context.parameters))
            return Response(status: .noContent)
        }
        routes.get("sessions/:id/entries") { request, context in try await entries(request, session: try RequestValues.sessionID(context.parameters)) }
        routes.get("sessions/:id/position") { request, context in
            try await position(request, session: try RequestValues.sessionID(context.parameters))
        }
        routes.get("filters") { _, _ in
            let filters = backend.filters().sorted { $0.key < $1.key }.map { NamedFilter(name: $0.key, filter: $0.value) }
            return try APIAnswer.json(FilterList(filters: filters))
        }
        return routes
    }

    private func list(_ request: Request) async throws -> Response {
        let query = request.uri.queryParameters
        let limit = try RequestValues.clamped(query, "limit", default: 100, max: Self.sessionPageLimit)
        let before = try RequestValues.integer(query, "after")
        // One more than the page, to know whether another follows.
        let found = try await backend.sessions(before: before, limit: limit + 1)
        let page = Array(found.prefix(limit))
        return try APIAnswer.json(SessionPage(sessions: page, nextAfter: found.count > limit ? page.last?.summary.id : nil))
    }

    private func entries(_ request: Request, session: Int64) async throws -> Response {
        let query = request.uri.queryParameters
        let offset = try RequestValues.clamped(query, "offset", default: 0, max: Int.max, min: 0)
        let limit = try RequestValues.clamped(query, "limit", default: 200, max: Self.entryPageLimit)
        let filter = try RequestValues.filter(query, named: backend.filters())
        let found = try await backend.entries(session: session, filter: filter, offset: offset, limit: limit)
        return try APIAnswer.json(EntryPage(entries: found.entries, total: found.total, offset: offset))
    }

    private func position(_ request: Request, session: Int64) async throws -> Response {
        let query = request.uri.queryParameters
        guard let sequence = try RequestValues.integer(query, "sequence") else { throw WebProblem.badRequest("give the entry: ?sequence=N") }
        let filter = try RequestValues.filter(query, named: backend.filters())
        guard let found = try await backend.position(of: sequence, session: session, filter: filter) else {
            throw WebProblem.notFound("entry \(sequence) is not an entry of session \(session)")
        }
        return try APIAnswer.json(EntryPosition(offset: found.offset, matches: found.matches))
    }
}
