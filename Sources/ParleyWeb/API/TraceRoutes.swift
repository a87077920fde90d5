import Hummingbird

/// `/api/traces`: recent traces, of one session or of all; `/api/traces/:trace`: every span of one trace (by its
/// id or the start of it), for the waterfall.
struct TraceRoutes<Context: RequestContext>: Sendable {
    let backend: any WebDebuggerBackend

    static var listLimit: Int { 500 }

    var routes: RouteCollection<Context> {
        let routes = RouteCollection(context: Context.self)
        routes.get("traces") { request, _ in
            let query = request.uri.queryParameters
            let session = try RequestValues.integer(query, "session")
            let limit = try RequestValues.clamped(query, "limit", default: 100, max: Self.listLimit)
            return try APIAnswer.json(TraceList(traces: try await backend.traces(session: session, limit: limit).map(WebTraceSummary.init)))
        }
        routes.get("traces/:trace") { _, context in
            let id = context.parameters.get("trace") ?? ""
            let spans = try await backend.trace(id)
            guard let first = spans.first else { throw WebProblem.notFound("no stored span belongs to trace \(id.prefix(64))") }
            return try APIAnswer.json(TraceSpans(traceID: first.span.traceID.hex, spans: spans.map(WebSpan.init)))
        }
        return routes
    }
}
