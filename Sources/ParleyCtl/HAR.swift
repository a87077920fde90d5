import Foundation
import ParleyCommandLine
import ParleyDebugger
import ParleyJSON
import ParleyTelemetry

/// An HTTP Archive (HAR 1.2, the format browsers' developer tools open and save) of the HTTP requests an app made:
/// its client spans that carry OpenTelemetry's HTTP attributes, current names first (`http.request.method`,
/// `url.full`, `http.response.status_code`, `network.protocol.version`, `http.request.header.*`, …) and the older
/// ones where those are missing (`http.method`, `http.url`, `http.status_code`, `http.flavor`, …).
///
/// What a span does not know, HAR marks unknown: header and body sizes -1, no cookies; the whole duration counts as
/// waiting (`timings.wait`), since a span has no send and receive phases. A request that got no response (status
/// unset, the span an error) has status 0, as browsers write it, and the error as the entry's comment.
struct HAR: Encodable {
    struct Log: Encodable {
        var version = "1.2"
        var creator = Creator()
        var entries: [Entry]
    }

    struct Creator: Encodable {
        var name = "parleyctl"
        var version = ParleyRelease.version
    }

    struct Entry: Encodable {
        var startedDateTime: String
        /// Milliseconds, the sum of the timings.
        var time: Double
        var request: Request
        var response: Response
        var cache = Cache()
        var timings: Timings
        var comment: String?
        /// Which span it came from (custom fields start with an underscore).
        var _traceId: String
        var _spanId: String
    }

    struct Request: Encodable {
        var method: String
        var url: String
        var httpVersion: String
        var cookies: [NameValue] = []
        var headers: [NameValue]
        var queryString: [NameValue]
        var headersSize = -1
        var bodySize: Int
    }

    struct Response: Encodable {
        var status: Int
        var statusText: String
        var httpVersion: String
        var cookies: [NameValue] = []
        var headers: [NameValue]
        var content: Content
        var redirectURL: String
        var headersSize = -1
        var bodySize: Int
    }

    struct Content: Encodable {
        var size: Int
        var mimeType: String
    }

    struct Cache: Encodable {}

    struct Timings: Encodable {
        var send: Double
        var wait: Double
        var receive: Double
    }

    struct NameValue: Encodable, Equatable {
        var name: String
        var value: String
    }

    var log: Log

    /// The archive of `spans`' HTTP client requests, by start time; `skipped` counts the client spans that are not
    /// HTTP requests (no method, or no URL to be found).
    static func archive(of spans: [SpanRecord]) -> (har: HAR, skipped: Int) {
        var entries: [(UInt64, Entry)] = []
        var skipped = 0
        for span in spans where span.kind == .client {
            guard let entry = entry(for: span) else {
                skipped += 1
                continue
            }
            entries.append((span.start.value, entry))
        }
        entries.sort { $0.0 < $1.0 }
        return (HAR(log: Log(entries: entries.map(\.1))), skipped)
    }

    static func entry(for span: SpanRecord) -> Entry? {
        let attributes = span.attributes
        func text(_ keys: String...) -> String? {
            for key in keys {
                switch attributes[key] {
                case .string(let value)?: return value
                case .int(let value)?: return String(value)
                case .array(let values)? where !values.isEmpty: return values.map(\.description).joined(separator: ", ")
                default: continue
                }
            }
            return nil
        }
        func number(_ keys: String...) -> Int? {
            for key in keys {
                switch attributes[key] {
                case .int(let value)?: return Int(clamping: value)
                case .double(let value)? where value.isFinite: return Int(value)
                case .string(let value)?: if let parsed = Int(value) { return parsed }
                default: continue
                }
            }
            return nil
        }
        var method = text("http.request.method", "http.method")
        if method == "_OTHER" { method = text("http.request.method_original") ?? method }
        guard let method, let url = text("url.full", "http.url") ?? assembledURL(text) else { return nil }
        let version = httpVersion(text("network.protocol.version", "http.flavor"))
        let status = number("http.response.status_code", "http.status_code") ?? 0
        let responseHeaders = headers(attributes, prefix: "http.response.header.")
        let responseBody = number("http.response.body.size", "http.response_content_length")
        let milliseconds = Double(span.durationNanos) / 1e6
        let failed = span.status.code == .error && status == 0
        return Entry(
            startedDateTime: Timestamp(milliseconds: Int64(clamping: span.start.value / 1_000_000)).iso8601,
            time: milliseconds,
            request: Request(
                method: method, url: url, httpVersion: version, headers: headers(attributes, prefix: "http.request.header."),
                queryString: queryString(of: url), bodySize: number("http.request.body.size", "http.request_content_length") ?? (method == "GET" ? 0 : -1)
            ),
            response: Response(
                status: status, statusText: status == 0 ? "" : reason(status), httpVersion: version, headers: responseHeaders,
                content: Content(
                    size: responseBody ?? 0,
                    mimeType: responseHeaders.first { $0.name.lowercased() == "content-type" }?.value ?? "x-unknown"),
                redirectURL: responseHeaders.first { $0.name.lowercased() == "location" }?.value ?? "",
                bodySize: responseBody ?? -1
            ),
            timings: Timings(send: 0, wait: milliseconds, receive: 0),
            comment: failed ? (span.status.message ?? "the request failed") : nil,
            _traceId: span.traceID.hex, _spanId: span.spanID.hex
        )
    }

    /// A URL from its parts, for instrumentations that do not write the full one (`url.scheme`, `server.address`,
    /// `server.port`, `url.path`, `url.query`; or the older `http.scheme`, `net.peer.name`, `net.peer.port`,
    /// `http.target`).
    private static func assembledURL(_ text: (String...) -> String?) -> String? {
        guard let host = text("server.address", "net.peer.name", "http.host") else { return nil }
        let scheme = text("url.scheme", "http.scheme") ?? "http"
        let port = text("server.port", "net.peer.port").map { ":" + $0 } ?? ""
        let target = text("http.target") ?? ((text("url.path") ?? "/") + (text("url.query").map { "?" + $0 } ?? ""))
        return scheme + "://" + host + port + target
    }

    /// OpenTelemetry's header attributes (`http.request.header.content-type`: `["application/json"]`), one HAR
    /// header per value, by name.
    private static func headers(_ attributes: TelemetryAttributes, prefix: String) -> [NameValue] {
        attributes.keys.filter { $0.hasPrefix(prefix) }.sorted().flatMap { key -> [NameValue] in
            let name = String(key.dropFirst(prefix.count))
            switch attributes[key]! {
            case .array(let values): return values.map { NameValue(name: name, value: $0.description) }
            case let value: return [NameValue(name: name, value: value.description)]
            }
        }
    }

    private static func queryString(of url: String) -> [NameValue] {
        guard let items = URLComponents(string: url)?.queryItems else { return [] }
        return items.map { NameValue(name: $0.name, value: $0.value ?? "") }
    }

    /// `1.1` → `HTTP/1.1`, `2` → `HTTP/2` (what browsers write); HTTP/1.1 when the span does not say.
    private static func httpVersion(_ version: String?) -> String {
        guard let version, !version.isEmpty else { return "HTTP/1.1" }
        return version.uppercased().hasPrefix("HTTP") ? version : "HTTP/" + version
    }

    /// The reason phrase of a status code (RFC 9110), empty for one it does not name.
    static func reason(_ status: Int) -> String {
        let phrases: [Int: String] = [
            100: "Continue", 101: "Switching Protocols", 200: "OK", 201: "Created", 202: "Accepted", 204: "No Content",
            206: "Partial Content", 301: "Moved Permanently", 302: "Found", 303: "See Other", 304: "Not Modified",
            307: "Temporary Redirect", 308: "Permanent Redirect", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden",
            404: "Not Found", 405: "Method Not Allowed", 406: "Not Acceptable", 408: "Request Timeout", 409: "Conflict", 410: "Gone",
            411: "Length Required", 412: "Precondition Failed", 413: "Content Too Large", 414: "URI Too Long",
            415: "Unsupported Media Type", 422: "Unprocessable Content", 429: "Too Many Requests", 500: "Internal Server Error",
            501: "Not Implemented", 502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout",
        ]
        return phrases[status] ?? ""
    }
}
