import Hummingbird

/// Every error a route or the access check throws, answered as a problem document (``WebProblem``): a
/// ``WebProblem`` as it is, the backend's own errors as the backend describes them
/// (``WebDebuggerBackend/problem(for:)``), Hummingbird's with their status, anything else as a 500 that is logged.
/// The one place where an error becomes a status: the routes only throw.
struct ProblemMiddleware<Context: RequestContext>: RouterMiddleware {
    let describe: @Sendable (any Error) -> WebProblem?

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch {
            return try problem(for: error, request: request, context: context).response(from: request, context: context)
        }
    }

    private func problem(for error: any Error, request: Request, context: Context) -> WebProblem {
        switch error {
        case let problem as WebProblem:
            return problem
        case let error as HTTPError:
            return WebProblem(error.status, error.status.reasonPhrase, detail: error.body ?? error.status.reasonPhrase)
        default:
            if let problem = describe(error) { return problem }
            context.logger.warning("web request failed", metadata: ["path": "\(request.uri.path)", "reason": "\(error)"])
            return WebProblem(.internalServerError, "Internal error", detail: "\(error)")
        }
    }
}
