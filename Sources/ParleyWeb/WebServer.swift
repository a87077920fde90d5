import Hummingbird
import Logging
import Metrics
import NIOCore
import ServiceLifecycle
import Synchronization

/// The web debugger's HTTP server, a `Service` of parleyd's service group. On graceful shutdown it ends the live
/// streams (they would otherwise hold their requests open), then stops accepting and finishes what is in flight.
public final class WebServer: Service {
    public let configuration: WebConfiguration
    private let backend: any WebDebuggerBackend
    private let events: LiveEvents
    private let assets: WebAssets
    private let logger: Logger
    private let metricsFactory: any MetricsFactory
    private let keepAliveInterval: Duration
    private let bound = BoundPort()

    public init(
        configuration: WebConfiguration, backend: any WebDebuggerBackend, events: LiveEvents, assets: WebAssets = WebAssets(),
        metricsFactory: any MetricsFactory, keepAliveInterval: Duration = .seconds(15), logger: Logger
    ) {
        self.configuration = configuration
        self.backend = backend
        self.events = events
        self.assets = assets
        self.metricsFactory = metricsFactory
        self.keepAliveInterval = keepAliveInterval
        self.logger = logger
    }

    /// The responder parleyd serves: access checks, the pages and the API. Tests drive it without a socket.
    public func makeRouter() -> Router<BasicRequestContext> {
        let router = Router(context: BasicRequestContext.self)
        let access = WebAccess<BasicRequestContext>(
            token: configuration.token, allowedHosts: WebAccess<BasicRequestContext>.allowedHosts(for: configuration),
            sessionSecret: Self.randomSecret()
        )
        router.add(middleware: RequestMetrics(factory: metricsFactory))
        let backend = self.backend
        router.add(middleware: SecurityHeaders { backend.problem(for: $0) })
        router.add(middleware: access)
        assets.register(on: router, sessionCookie: access.sessionCookie)
        WebAPI<BasicRequestContext>(backend: backend, events: events, keepAliveInterval: keepAliveInterval).register(on: router)
        return router
    }

    /// What parleyd serves: the router, with HEAD answered as GET without the body (RFC 9110 §9.3.2) before routing,
    /// since the router has GET routes only.
    public func makeResponder() -> some HTTPResponder<BasicRequestContext> {
        HeadAsGet(base: makeRouter().buildResponder())
    }

    /// Resolves once the server listens, with the port it got (the one asked for, or a free one for port 0); nil
    /// if it could not listen.
    public func waitUntilListening() async -> Int? { await bound.wait() }

    public func run() async throws {
        let bound = self.bound
        let application = Application(
            responder: makeResponder(),
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: nil),
            onServerRunning: { channel in bound.set(channel.localAddress?.port ?? 0) },
            logger: logger
        )
        let events = self.events
        /// Which of the two tasks below ended.
        enum Ended: Sendable { case server, shutdownBegan }
        do {
            try await withThrowingTaskGroup(of: Ended.self) { group in
                // The application shuts itself down gracefully (it follows the same graceful-shutdown signal): it
                // stops accepting and lets requests in flight finish. It must not be cancelled for that: a
                // cancelled server leaves its child channels to be torn down while the process exits.
                group.addTask {
                    try await application.run()
                    return .server
                }
                group.addTask {
                    // Live streams never end by themselves: end them, so that the server's shutdown is not held up.
                    try? await gracefulShutdown()
                    events.close()
                    return .shutdownBegan
                }
                while let ended = try await group.next() {
                    if ended == .server {
                        group.cancelAll()
                        return
                    }
                }
            }
        } catch {
            bound.set(nil)
            events.close()
            throw WebServerError.cannotListen(host: configuration.host, port: configuration.port, reason: "\(error)")
        }
        bound.set(nil)
    }

    static func randomSecret() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<4).map { _ in String(generator.next() as UInt64, radix: 16).leftPadded(to: 16) }.joined()
    }
}

extension String {
    fileprivate func leftPadded(to length: Int) -> String { String(repeating: "0", count: max(0, length - count)) + self }
}

/// Why the web debugger is not running.
public enum WebServerError: Error, CustomStringConvertible {
    case cannotListen(host: String, port: Int, reason: String)

    public var description: String {
        switch self {
        case .cannotListen(let host, let port, let reason):
            "the web debugger cannot listen on \(host.contains(":") ? "[\(host)]" : host):\(port): \(reason); set webListen to another HOST:PORT, or to off"
        }
    }
}

/// The port the server got, for whoever waits for it; nil once it has stopped or failed.
private final class BoundPort: Sendable {
    private let state = Mutex<(result: Int??, waiters: [CheckedContinuation<Int?, Never>])>((nil, []))

    func set(_ port: Int?) {
        let waiters = state.withLock { state in
            guard state.result == nil else { return [CheckedContinuation<Int?, Never>]() }
            state.result = .some(port)
            defer { state.waiters.removeAll() }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(returning: port) }
    }

    func wait() async -> Int? {
        await withCheckedContinuation { continuation in
            let result: Int?? = state.withLock { state in
                if let result = state.result { return result }
                state.waiters.append(continuation)
                return nil
            }
            if let result { continuation.resume(returning: result) }
        }
    }
}

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

/// HEAD as GET, body dropped.
struct HeadAsGet<Base: HTTPResponder>: HTTPResponder {
    let base: Base

    func respond(to request: Request, context: Base.Context) async throws -> Response {
        guard request.method == .head else { return try await base.respond(to: request, context: context) }
        var head = request.head
        head.method = .get
        var response = try await base.respond(to: Request(head: head, body: request.body), context: context)
        response.body = ResponseBody()
        return response
    }
}
