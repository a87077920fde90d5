import Hummingbird

/// `POST /api/entries/:seq/replay`: sends an entry's state to its session's app, to the app the body names, or to
/// every app.
struct ReplayRoutes<Context: RequestContext>: Sendable {
    let backend: any WebDebuggerBackend

    var routes: RouteCollection<Context> {
        let routes = RouteCollection(context: Context.self)
        routes.post("entries/:seq/replay") { request, context in
            let sequence = try RequestValues.sequence(context.parameters)
            let target = try await RequestValues.body(
                request, as: ReplayTarget.self, empty: ReplayTarget(),
                problem: .badRequest("the body must be {} (the session's app), {\"to\": \"NAME-OR-ID\"} or {\"all\": true}"))
            return try APIAnswer.json(try await backend.replay(sequence, to: target.to, all: target.all ?? false))
        }
        return routes
    }
}
