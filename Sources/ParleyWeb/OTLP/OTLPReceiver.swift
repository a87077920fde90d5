import Foundation
import ParleyOTLP
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle

/// parleyd's OTLP/HTTP receiver, a `Service` of its service group: OpenTelemetry SDKs in any language export
/// traces and logs to it (`OTEL_EXPORTER_OTLP_ENDPOINT`), and what they send lands in the history beside the
/// Swift apps' records. A port already taken (a collector runs there) is said once, and parleyd carries on
/// without the receiver.
public final class OTLPReceiver: Service {
    public let configuration: OTLPConfiguration
    private let sink: any OTLPSink
    private let logger: Logger
    private let bound = BoundPort()
    private let connections: WebConnectionCount
    private let startsAfter: (@Sendable () async throws -> Void)?
    private let warn: @Sendable (Logger.Message, Logger.Metadata) -> Void

    /// - Parameters:
    ///   - warn: how a refused export is said (parleyd: through its log throttle, so that a client sending garbage
    ///     in a loop does not flood the log); `logger`'s warnings when nil.
    ///   - startsAfter: what must be up before the receiver listens (parleyd: its Parley port and its web
    ///     debugger). If it throws, the receiver does not start: that failure is the one to report, and `run()`
    ///     returns when the service group shuts down, in its turn.
    public init(
        configuration: OTLPConfiguration, sink: any OTLPSink, logger: Logger, warn: (@Sendable (Logger.Message, Logger.Metadata) -> Void)? = nil,
        startsAfter: (@Sendable () async throws -> Void)? = nil
    ) {
        self.startsAfter = startsAfter
        self.configuration = configuration
        self.sink = sink
        self.logger = logger
        self.warn = warn ?? { [logger] message, metadata in logger.warning(message, metadata: metadata) }
        self.connections = WebConnectionCount(limit: configuration.maxConnections)
    }

    /// The routes behind the access check; tests drive it without a socket.
    func makeRouter() -> Router<OTLPRequestContext> {
        let router = Router(context: OTLPRequestContext.self)
        let hosts = WebAccess<OTLPRequestContext>.allowedHosts(host: configuration.host, extraHostNames: configuration.extraHostNames)
        router.add(middleware: OTLPRefusalLog(warn: warn))
        router.add(middleware: OTLPAccess(token: configuration.token, allowedHosts: hosts))
        router.addRoutes(OTLPRoutes(sink: sink, configuration: configuration, warn: warn).routes)
        return router
    }

    /// Resolves once the receiver listens, with its port; nil if it could not listen.
    public func waitUntilListening() async -> Int? { await bound.wait() }

    public func run() async throws {
        if let startsAfter {
            do {
                try await startsAfter()
            } catch {
                bound.set(nil)
                try? await gracefulShutdown()
                return
            }
        }
        let application = guardedHTTPServer(
            responder: makeRouter().buildResponder(), host: configuration.host, port: configuration.port, connections: connections,
            headerTimeout: configuration.headerTimeout, stallTimeout: configuration.stallTimeout, bound: bound, logger: logger)
        do {
            try await application.run()
        } catch where !bound.isSettled {
            // Not a failure of parleyd: another program (an OpenTelemetry Collector, most likely) has the port, and
            // the rest of parleyd works without the receiver.
            logger.warning(
                "the OTLP receiver is off: cannot listen on \(configuration.host):\(configuration.port): \(WebServer.reason(error)); set otlpListen to another HOST:PORT, or to off",
                metadata: ["otlp-listen": "\(configuration.host):\(configuration.port)"])
            // After the warning: whoever waits for the port (the readiness line) finds the reason already said.
            bound.set(nil)
            try? await gracefulShutdown()
            return
        }
        bound.set(nil)
    }

}

/// The web debugger's rules for the OTLP routes: `Host` a name parleyd answers to or an address (421), and with a
/// token, `Authorization: Bearer <token>` on every request (401).
struct OTLPAccess: RouterMiddleware {
    typealias Context = OTLPRequestContext
    let token: String?
    let allowedHosts: Set<String>

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let encoding = request.headers[.contentType].flatMap(OTLPEncoding.init(contentType:))
        guard let authority = request.head.authority,
            WebAccess<Context>.answers(to: WebAccess<Context>.hostName(of: authority), allowedHosts: allowedHosts)
        else {
            throw OTLPProblem(.misdirectedRequest, encoding: encoding, "this receiver answers to \(allowedHosts.sorted().joined(separator: ", ")) and IP addresses only")
        }
        if let token {
            guard let offered = WebAccess<Context>.bearerToken(of: request), constantTimeEqual(offered, token) else {
                throw OTLPProblem(
                    .unauthorized, encoding: encoding,
                    "this receiver needs its token: set OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer%20<token>")
            }
        }
        return try await next(request, context)
    }
}

/// One warning for each export refused, saying why as its sender was told, and who sent it: a sender's own log may
/// be nowhere to be seen. Not for 429, which is parleyd shedding load as OTLP expects, not something wrong.
struct OTLPRefusalLog: RouterMiddleware {
    typealias Context = OTLPRequestContext
    let warn: @Sendable (Logger.Message, Logger.Metadata) -> Void

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let problem as OTLPProblem {
            if problem.status != .tooManyRequests {
                warn(
                    "OTLP export refused",
                    ["status": "\(problem.status.code)", "path": "\(request.uri.path)", "client": "\(context.remoteAddressText)", "reason": "\(problem.message)"])
            }
            throw problem
        }
    }
}
