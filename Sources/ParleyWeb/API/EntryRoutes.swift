import Hummingbird

/// `/api/entries/:seq…`: one entry with its neighbours, its state byte for byte and its screenshot (both kept by
/// the browser: they never change once stored).
struct EntryRoutes<Context: RequestContext>: Sendable {
    let backend: any WebDebuggerBackend

    var routes: RouteCollection<Context> {
        let routes = RouteCollection(context: Context.self)
        routes.get("entries/:seq") { _, context in try APIAnswer.json(try await backend.entry(try RequestValues.sequence(context.parameters))) }
        routes.get("entries/:seq/state") { request, context in
            let sequence = try RequestValues.sequence(context.parameters)
            return try await APIAnswer.stored(request, history: backend.historyIdentity, tag: "state-\(sequence)", contentType: "application/json") {
                try await backend.state(of: sequence)
            }
        }
        routes.get("entries/:seq/screenshot") { request, context in
            let sequence = try RequestValues.sequence(context.parameters)
            return try await APIAnswer.stored(request, history: backend.historyIdentity, tag: "screenshot-\(sequence)", contentType: "image/png") {
                let png = try await backend.screenshot(of: sequence)
                guard png.readableBytes > 0 else { throw WebProblem.notFound("entry \(sequence) has no screenshot") }
                return png
            }
        }
        return routes
    }
}
