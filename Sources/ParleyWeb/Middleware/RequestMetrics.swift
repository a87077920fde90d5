import Hummingbird
import Metrics

/// `parley_web_requests_total{status}`, through swift-metrics with parleyd's own factory (no global bootstrap:
/// tests run several parleyds in one process).
struct RequestMetrics<Context: RequestContext>: RouterMiddleware {
    /// One counter per status class, made once rather than looked up in the registry on every request.
    private let counters: [Counter]

    init(factory: any MetricsFactory) {
        counters = (1...5).map { Counter(label: "parley_web_requests_total", dimensions: [("status", "\($0)xx")], factory: factory) }
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let response = try await next(request, context)
        counters[min(max(response.status.code / 100, 1), 5) - 1].increment()
        return response
    }
}
