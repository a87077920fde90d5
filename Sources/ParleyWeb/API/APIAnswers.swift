import Foundation
import Hummingbird
import NIOCore

/// How the API answers: JSON never kept by the browser, and what never changes once stored with an entity tag.
enum APIAnswer {
    static func json(_ value: some Encodable, status: HTTPResponse.Status = .ok) throws -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        headers[.cacheControl] = "no-store"
        return Response(status: status, headers: headers, body: .init(byteBuffer: try WebJSON.encode(value)))
    }

    /// What never changes once stored (an entry's state and screenshot, the diff of two entries): a browser keeps
    /// it and asks again with its tag, answered 304 without reading the history. The tag names the history as
    /// well as the entry, because entry numbers start again in another data directory behind the same address.
    static func stored(
        _ request: Request, history: String, tag: String, contentType: String, _ body: () async throws -> ByteBuffer
    ) async throws -> Response {
        var headers = HTTPFields()
        headers[.eTag] = "\"\(history)-\(tag)\""
        headers[.cacheControl] = "private, no-cache"
        if let offered = request.headers[.ifNoneMatch], offered.split(separator: ",").contains(where: { $0.trimmingCharacters(in: .whitespaces) == headers[.eTag] }) {
            return Response(status: .notModified, headers: headers)
        }
        headers[.contentType] = contentType
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: try await body()))
    }
}
