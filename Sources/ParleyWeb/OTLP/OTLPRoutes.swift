import Foundation
import HTTPTypes
import Hummingbird
import Logging
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
    /// Exports past admission, and the messages of those being decoded.
    let inFlight: Mutex<(exports: Int, messages: Int)>
    /// Says what the receiver did to an export that was not as it should be (parleyd: through its log throttle).
    let warn: @Sendable (Logger.Message, Logger.Metadata) -> Void

    init(sink: any OTLPSink, configuration: OTLPConfiguration, warn: @escaping @Sendable (Logger.Message, Logger.Metadata) -> Void) {
        self.sink = sink
        self.configuration = configuration
        self.inFlight = Mutex((0, 0))
        self.warn = warn
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
        defer { inFlight.withLock { $0.exports -= 1 } }
        let data = try await body(of: request, encoding: encoding)
        // Counted before decoding: a body of empty attributes takes forty times its size once decoded.
        let messages = OTLPExport.messageCount(data, signal: signal, encoding: encoding)
        guard messages <= configuration.maxMessagesPerExport else {
            throw OTLPProblem(
                .contentTooLarge, encoding: encoding,
                "the export holds \(messages) messages (spans, log records, attributes, values…), more than the \(configuration.maxMessagesPerExport) parleyd decodes at once; send smaller batches")
        }
        guard admit(messages: messages) else {
            throw OTLPProblem(.tooManyRequests, encoding: encoding, retryAfter: 1, "parleyd is decoding \(configuration.maxMessagesInFlight) messages of other exports; retry shortly")
        }
        defer { inFlight.withLock { $0.messages -= messages } }
        let export: OTLPExport
        do {
            export = try OTLPExport.decode(data, signal: signal, encoding: encoding)
        } catch {
            throw OTLPProblem(.badRequest, encoding: encoding, error.reason)
        }
        let client = context.remoteAddressText
        if export.textsRepaired > 0 {
            warn(
                "OTLP text that is not UTF-8 stored with U+FFFD in place of each bad sequence",
                ["client": "\(client)", "signal": "\(signal.rawValue)", "texts": "\(export.textsRepaired)"])
        }
        if export.rejected > 0, let rejection = export.rejection {
            warn("OTLP items refused", ["client": "\(client)", "signal": "\(signal.rawValue)", "items": "\(export.rejected)", "reason": "\(rejection)"])
        }
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
        inFlight.withLock { inFlight in
            guard inFlight.exports < configuration.maxConcurrentExports else { return false }
            inFlight.exports += 1
            return true
        }
    }

    /// An export's messages to decode, unless those of others already being decoded leave no room for them.
    private func admit(messages: Int) -> Bool {
        inFlight.withLock { inFlight in
            guard inFlight.messages == 0 || inFlight.messages + messages <= configuration.maxMessagesInFlight else { return false }
            inFlight.messages += messages
            return true
        }
    }

    /// The body, read up to the limit (413 past it, by `Content-Length` before reading anything) and gunzipped
    /// within the same limit: a small gzip that inflates past it (a "gzip bomb") is refused as it inflates.
    func body(of request: Request, encoding: OTLPEncoding?) async throws -> Data {
        let limit = configuration.maxBodyBytes
        let size = limit % (1 << 20) == 0 ? "\(limit >> 20) MiB" : "\(limit) bytes"
        let tooLarge = OTLPProblem(.contentTooLarge, encoding: encoding, "an export is at most \(size); send smaller batches")
        if let length = request.headers[.contentLength].flatMap(Int.init), length > limit { throw tooLarge }
        var body: ByteBuffer
        do {
            body = try await request.body.collect(upTo: limit)
        } catch is NIOTooManyBytesError {
            // A body without Content-Length (chunked) that goes on past the limit.
            throw tooLarge
        } catch let error as HTTPError where error.status == .contentTooLarge {
            throw tooLarge
        }
        switch request.headers[.contentEncoding]?.lowercased() {
        case nil, "identity":
            break
        case "gzip":
            do {
                body = try BoundedGunzip.inflate(body, limit: limit)
            } catch .tooLarge {
                throw OTLPProblem(.contentTooLarge, encoding: encoding, "the body inflates past \(size); send smaller batches")
            } catch .invalid(let reason) {
                throw OTLPProblem(.badRequest, encoding: encoding, "the body is not valid gzip: \(reason)")
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
