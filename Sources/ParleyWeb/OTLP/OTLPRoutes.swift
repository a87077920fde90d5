import CompressNIO
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import ParleyOTLP
import Synchronization

/// `POST /v1/traces` and `POST /v1/logs` as the OTLP/HTTP specification has them: protobuf or JSON bodies, gzip or
/// not; 200 (with a partial success when some items were refused), 400 for a body that is not an export, 413 past
/// the size limit, 415 for another content type or encoding, 429 or 503 with `Retry-After` when parleyd sheds
/// load. Errors carry a `google.rpc.Status` in the request's encoding. `POST /v1/metrics` is answered 200 and
/// dropped: parleyd shows no metrics.
final class OTLPRoutes: Sendable {
    typealias Context = OTLPRequestContext

    let sink: any OTLPSink
    let configuration: OTLPConfiguration
    let inFlight: Mutex<Int>
    init(sink: any OTLPSink, configuration: OTLPConfiguration) {
        self.sink = sink
        self.configuration = configuration
        self.inFlight = Mutex(0)
    }

    var routes: RouteCollection<Context> {
        let routes = RouteCollection(context: Context.self)
        routes.post("v1/traces") { request, context in try await self.export(.traces, request, context) }
        routes.post("v1/logs") { request, context in try await self.export(.logs, request, context) }
        routes.post("v1/metrics") { request, _ in
            // Read (and discard) within the limit, so that a well-behaved exporter sees success and moves on.
            let encoding = request.headers[.contentType].flatMap(OTLPEncoding.init(contentType:))
            _ = try await self.body(of: request, encoding: encoding)
            return Self.answer(.ok, encoding: encoding, body: Data())
        }
        return routes
    }

    func export(_ signal: OTLPSignal, _ request: Request, _ context: Context) async throws -> Response {
        guard let encoding = request.headers[.contentType].flatMap(OTLPEncoding.init(contentType:)) else {
            throw OTLPProblem(
                .unsupportedMediaType, encoding: nil,
                "send application/x-protobuf or application/json (this request's content type: \(request.headers[.contentType] ?? "none"))")
        }
        guard admit() else {
            throw OTLPProblem(.tooManyRequests, encoding: encoding, retryAfter: 1, "parleyd is storing \(configuration.maxConcurrentExports) exports already; retry shortly")
        }
        defer { inFlight.withLock { $0 -= 1 } }
        let data = try await body(of: request, encoding: encoding)
        let export: OTLPExport
        do {
            export = try OTLPExport.decode(data, signal: signal, encoding: encoding)
        } catch {
            throw OTLPProblem(.badRequest, encoding: encoding, error.reason)
        }
        let client = context.remoteAddressText
        switch await sink.store(export, signal: signal, client: client) {
        case .stored(let rejected, let reason):
            let total = rejected + export.rejected
            let message = export.rejection ?? reason
            return Self.answer(.ok, encoding: encoding, body: OTLPExport.response(signal: signal, encoding: encoding, rejected: total, message: total > 0 ? message : nil))
        case .unavailable(let seconds, let reason):
            throw OTLPProblem(.serviceUnavailable, encoding: encoding, retryAfter: seconds, reason)
        }
    }

    /// One more export in flight, unless there are as many as allowed.
    private func admit() -> Bool {
        inFlight.withLock { count in
            guard count < configuration.maxConcurrentExports else { return false }
            count += 1
            return true
        }
    }

    /// The body, read up to the limit (413 past it, by `Content-Length` before reading anything) and gunzipped
    /// within the same limit: a small gzip that inflates past it (a "gzip bomb") is refused as it inflates.
    func body(of request: Request, encoding: OTLPEncoding?) async throws -> Data {
        let limit = configuration.maxBodyBytes
        let tooLarge = OTLPProblem(.contentTooLarge, encoding: encoding, "an export is at most \(limit >> 20) MiB; send smaller batches")
        if let length = request.headers[.contentLength].flatMap(Int.init), length > limit { throw tooLarge }
        var body: ByteBuffer
        do {
            body = try await request.body.collect(upTo: limit)
        } catch let error as HTTPError where error.status == .contentTooLarge {
            throw tooLarge
        }
        switch request.headers[.contentEncoding]?.lowercased() {
        case nil, "identity":
            break
        case "gzip":
            do {
                body = try body.decompress(with: .gzip(), maxSize: limit)
            } catch let error as CompressNIOError where error == .bufferOverflow {
                throw OTLPProblem(.contentTooLarge, encoding: encoding, "the body inflates past \(limit >> 20) MiB; send smaller batches")
            } catch {
                throw OTLPProblem(.badRequest, encoding: encoding, "the body is not valid gzip (\(error))")
            }
        case let other?:
            throw OTLPProblem(.unsupportedMediaType, encoding: encoding, "content encoding \(other) is not supported; send gzip or none")
        }
        return Data(body.readableBytesView)
    }

    static func answer(_ status: HTTPResponse.Status, encoding: OTLPEncoding?, body: Data) -> Response {
        Response(
            status: status, headers: [.contentType: (encoding ?? .json).rawValue],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: body)))
    }
}

/// An OTLP/HTTP error answer: its status, a `google.rpc.Status` body, and `Retry-After` when the sender should
/// try again.
struct OTLPProblem: Error, HTTPResponseError, CustomStringConvertible {
    var status: HTTPResponse.Status
    var encoding: OTLPEncoding?
    var retryAfter: Int?
    var message: String

    init(_ status: HTTPResponse.Status, encoding: OTLPEncoding?, retryAfter: Int? = nil, _ message: String) {
        self.status = status
        self.encoding = encoding
        self.retryAfter = retryAfter
        self.message = message
    }

    var description: String { "\(status.code): \(message)" }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        // google.rpc.Code: 3 invalid argument, 8 resource exhausted, 14 unavailable.
        let code: Int32 =
            switch status {
            case .tooManyRequests, .contentTooLarge: 8
            case .serviceUnavailable: 14
            default: 3
            }
        var response = OTLPRoutes.answer(status, encoding: encoding, body: OTLPExport.status(code: code, message: message, encoding: encoding))
        if let retryAfter { response.headers[.retryAfter] = String(retryAfter) }
        return response
    }
}

/// A request with the address it came from: a resource that names no service instance is keyed by it.
struct OTLPRequestContext: RequestContext, RemoteAddressRequestContext {
    var coreContext: CoreRequestContextStorage
    let remoteAddress: SocketAddress?

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }

    /// The client's address without its port (`10.0.0.7`, `::1`), or "unknown".
    var remoteAddressText: String { remoteAddress?.ipAddress ?? "unknown" }
}
