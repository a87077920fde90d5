import HTTPTypes
import Hummingbird
import NIOCore

/// An error a person reads, sent as an RFC 9457 problem document (`application/problem+json`).
public struct WebProblem: Error, Sendable, Hashable, CustomStringConvertible, HTTPResponseError {
    public var status: HTTPResponse.Status
    /// A short summary that does not change from occurrence to occurrence ("No such session").
    public var title: String
    /// What happened this time, and what to do.
    public var detail: String

    public init(_ status: HTTPResponse.Status, _ title: String, detail: String) {
        self.status = status
        self.title = title
        self.detail = detail
    }

    public var description: String { "\(status.code) \(title): \(detail)" }

    public static func notFound(_ detail: String) -> WebProblem { WebProblem(.notFound, "Not found", detail: detail) }
    public static func badRequest(_ detail: String) -> WebProblem { WebProblem(.badRequest, "Bad request", detail: detail) }
    public static func conflict(_ detail: String) -> WebProblem { WebProblem(.conflict, "Conflict", detail: detail) }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        let document = Document(title: title, status: Int(status.code), detail: detail)
        let body = try WebJSON.encoder.encodeAsByteBuffer(document, allocator: ByteBufferAllocator())
        var headers = HTTPFields()
        headers[.contentType] = "application/problem+json"
        headers[.cacheControl] = "no-store"
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: body))
    }

    private struct Document: Encodable {
        // No problem types of our own: "about:blank" says the status code carries the meaning.
        var type = "about:blank"
        var title: String
        var status: Int
        var detail: String
    }
}
