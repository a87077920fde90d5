import Foundation
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
    /// The live events, for every open page.
    let liveFeed: LiveFeed
    private let assets: WebAssets
    private let logger: Logger
    private let metricsFactory: any MetricsFactory
    private let keepAliveInterval: Duration
    private let bound = BoundPort()
    private let startsAfter: (@Sendable () async throws -> Void)?
    /// Open web connections, against ``WebConfiguration/maxConnections``.
    public let connections: WebConnectionCount

    /// - Parameter startsAfter: what must be up before the server listens (parleyd: its Parley port). If it
    ///   throws, the server does not start and `run()` returns: that failure is the one to report, and a server
    ///   started and torn down at once would only add lines before it.
    public init(
        configuration: WebConfiguration, backend: any WebDebuggerBackend, assets: WebAssets = WebAssets(),
        metricsFactory: any MetricsFactory, keepAliveInterval: Duration = .seconds(15), logger: Logger,
        startsAfter: (@Sendable () async throws -> Void)? = nil
    ) {
        self.startsAfter = startsAfter
        self.configuration = configuration
        self.connections = WebConnectionCount(limit: configuration.maxConnections)
        self.liveFeed = LiveFeed(limits: LiveFeed.Limits(pages: configuration.maxLivePages)) { [backend] in backend.liveEvents() }
        self.backend = backend
        self.assets = assets
        self.metricsFactory = metricsFactory
        self.keepAliveInterval = keepAliveInterval
        self.logger = logger
    }

    /// The responder parleyd serves: access checks, the pages and the API. Tests drive it without a socket.
    public func makeRouter() -> Router<BasicRequestContext> {
        typealias Context = BasicRequestContext
        let router = Router(context: Context.self)
        let access = WebAccess<Context>(
            token: configuration.token, signInToken: configuration.signInToken,
            allowedHosts: WebAccess<Context>.allowedHosts(for: configuration), sessionSecret: WebConfiguration.randomToken(),
            signInURLHint: configuration.signInURLHint
        )
        router.add(middleware: RequestMetrics(factory: metricsFactory))
        router.add(middleware: SecurityHeaders())
        let backend = self.backend
        router.add(middleware: ProblemMiddleware { backend.problem(for: $0) })
        router.add(middleware: access)
        assets.register(on: router)
        // The API, one collection of routes per resource.
        for routes in [
            SessionRoutes<Context>(backend: backend).routes, EntryRoutes<Context>(backend: backend).routes,
            DiffRoutes<Context>(backend: backend).routes, ReplayRoutes<Context>(backend: backend).routes,
            TransferRoutes<Context>(backend: backend).routes, PeerRoutes<Context>(backend: backend).routes,
            DrawerRoutes<Context>(backend: backend).routes, DeviceRoutes<Context>(backend: backend).routes,
            TimelineRoutes<Context>(backend: backend).routes,
            TraceRoutes<Context>(backend: backend).routes,
            LiveRoutes<Context>(feed: liveFeed, keepAliveInterval: keepAliveInterval).routes,
        ] {
            router.addRoutes(routes, atPath: "/api")
        }
        router.addRoutes(MetricsRoutes<Context>(backend: backend).routes)
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
        if let startsAfter {
            do {
                try await startsAfter()
            } catch {
                bound.set(nil)
                return
            }
        }
        let application = guardedHTTPServer(
            responder: makeResponder(), host: configuration.host, port: configuration.port, connections: connections,
            headerTimeout: configuration.headerTimeout, stallTimeout: configuration.stallTimeout, bound: bound, logger: logger)
        let liveFeed = self.liveFeed
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
                    liveFeed.close()
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
            liveFeed.close()
            throw WebServerError.cannotListen(host: configuration.host, port: configuration.port, reason: Self.reason(error))
        }
        bound.set(nil)
    }

    /// Why binding failed, as a person reads it: NIO's `IOError` names the system call (`bind(descriptor:ptr:bytes:)`).
    static func reason(_ error: any Error) -> String {
        guard let error = error as? IOError else { return "\(error)" }
        switch error.errnoCode {
        case EADDRINUSE: return "the address is already in use by another program"
        case EADDRNOTAVAIL: return "no interface of this host has that address"
        case EACCES: return "permission denied (ports below 1024 need privileges)"
        default: return String(cString: strerror(error.errnoCode))
        }
    }
}

/// An HTTP/1 server as parleyd's HTTP faces (the web debugger, the OTLP receiver) run one: open connections
/// counted against `connections`, a request head due within `headerTimeout`, a body or a reader that stalls for
/// `stallTimeout` closed, and `bound` told the port once it listens.
func guardedHTTPServer<Responder: HTTPResponder>(
    responder: Responder, host: String, port: Int, connections: WebConnectionCount, headerTimeout: Duration, stallTimeout: Duration,
    bound: BoundPort, logger: Logger
) -> some ApplicationProtocol where Responder.Context: InitializableFromSource<ApplicationRequestContextSource> {
    let stall = TimeAmount(stallTimeout)
    return Application(
        responder: responder,
        server: .http1(
            configuration: .init(
                additionalChannelHandlers: [WebConnectionGuard(count: connections, stallTimeout: stall)], idleTimeout: TimeAmount(headerTimeout))
        ),
        configuration: .init(address: .hostname(host, port: port), serverName: nil),
        onServerRunning: { channel in bound.set(channel.localAddress?.port ?? 0) },
        logger: logger
    )
}

extension String {
    func leftPadded(to length: Int) -> String { String(repeating: "0", count: max(0, length - count)) + self }
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
final class BoundPort: Sendable {
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

    /// Whether the server has listened (or been given up on) already.
    var isSettled: Bool { state.withLock { $0.result != nil } }

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
