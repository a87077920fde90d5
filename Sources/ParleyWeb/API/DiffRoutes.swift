import Hummingbird
import ParleyDebugger

/// `/api/diff?to=N&from=M`: parleyd's diff of two entries' states; without `from`, against the entry before.
struct DiffRoutes<Context: RequestContext>: Sendable {
    let backend: any WebDebuggerBackend

    var routes: RouteCollection<Context> {
        let routes = RouteCollection(context: Context.self)
        routes.get("diff") { request, _ in try await diff(request) }
        return routes
    }

    private func diff(_ request: Request) async throws -> Response {
        let query = request.uri.queryParameters
        guard let to = try RequestValues.integer(query, "to") else { throw WebProblem.badRequest("give the entry to compare: ?to=N (and ?from=M)") }
        // With `from` given both entries are fixed, so is their diff; without, retention may change the predecessor.
        guard let from = try RequestValues.integer(query, "from") else {
            return try APIAnswer.json(DiffReport(try await backend.diff(from: nil, to: to)))
        }
        return try await APIAnswer.stored(request, history: backend.historyIdentity, tag: "diff-\(from)-\(to)", contentType: "application/json") {
            try WebJSON.encode(DiffReport(try await backend.diff(from: from, to: to)))
        }
    }
}
