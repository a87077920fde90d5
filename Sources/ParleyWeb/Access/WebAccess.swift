import Foundation
import HTTPTypes
import Hummingbird

/// Who may use the web debugger, checked before any route runs:
///
/// * `Host` must be a name parleyd answers to, or an IP address (421 otherwise): a page on another site cannot reach
///   parleyd by rebinding its own DNS name to 127.0.0.1. An address cannot be rebound, and one listening on every
///   interface (`0.0.0.0`) is opened by whichever of the machine's addresses a person types.
/// * With an access token, every request carries it (`Authorization: Bearer`) or the session cookie a browser gets
///   by opening `/?token=…` once; otherwise 401 and nothing else.
/// * Without one (loopback only), reading is open.
/// * A request that changes something (any method but GET and HEAD) needs the sign-in token as a bearer, or the
///   session cookie, which only opening `/?token=<sign-in token>` gives (parleyd hands that URL out over its control
///   socket, through `parleyctl web`), and, when the browser sends `Origin`, our own origin: neither another local
///   user who can reach the port but not the socket, nor another site in the same browser, can change anything.
///
/// Its refusals tell the person in the browser where to get the sign-in URL in the words of the program that runs
/// the web debugger (``WebConfiguration/signInURLHint``): this module names no command.
struct WebAccess<Context: RequestContext>: RouterMiddleware {
    let token: String?
    /// ``WebConfiguration/signInToken``: the access token, or this run's own.
    let signInToken: String
    let allowedHosts: Set<String>
    /// The session cookie's value: random per parleyd run, so a restart signs every browser out.
    let sessionSecret: String
    /// ``WebConfiguration/signInURLHint``.
    let signInURLHint: String

    static var cookieName: String { "parley_web" }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let authority = request.head.authority, Self.answers(to: Self.hostName(of: authority), allowedHosts: allowedHosts) else {
            throw WebProblem(
                .misdirectedRequest, "Unknown host",
                detail: "this server answers to \(allowedHosts.sorted().joined(separator: ", ")) and IP addresses only; open \(signInURLHint)"
            )
        }
        let hasSession = request.cookies[Self.cookieName].map { constantTimeEqual($0.value, sessionSecret) } ?? false
        let hasToken = Self.bearerToken(of: request).map { constantTimeEqual($0, signInToken) } ?? false

        // The sign-in URL: trade the token for the cookie and take it out of the address bar.
        if request.method == .get, let offered = request.uri.queryParameters.get("token") {
            guard constantTimeEqual(offered, signInToken) else { throw unauthorized }
            var response = Response(status: .seeOther, headers: [.location: request.uri.path])
            response.setCookie(sessionCookie)
            return response
        }
        if token != nil {
            guard hasSession || hasToken else { throw unauthorized }
        }
        // What the page may do, so that it can say it is read-only before a change is refused.
        if request.method == .get, request.uri.path == "/api/access" {
            return Response(
                status: .ok, headers: [.contentType: "application/json", .cacheControl: "no-store"],
                body: .init(byteBuffer: ByteBuffer(string: #"{"canChange":\#(hasToken || hasSession)}"#))
            )
        }
        if request.method != .get && request.method != .head {
            guard hasToken || (hasSession && isSameOrigin(request)) else {
                throw WebProblem(
                    .forbidden, "Read-only",
                    detail: "changing anything needs the web debugger opened from \(signInURLHint), which carries its sign-in token "
                        + "(open it again after a restart)"
                )
            }
        }
        return try await next(request, context)
    }

    var sessionCookie: Cookie {
        Cookie(name: Self.cookieName, value: sessionSecret, path: "/", httpOnly: true, sameSite: .strict)
    }

    var unauthorized: WebProblem {
        WebProblem(.unauthorized, "Unauthorized", detail: "a valid access token is required: open \(signInURLHint)")
    }

    /// The token of an `Authorization: Bearer …` header.
    static func bearerToken(of request: Request) -> String? {
        guard let value = request.headers[.authorization], value.lowercased().hasPrefix("bearer ") else { return nil }
        return String(value.dropFirst("bearer ".count)).trimmingCharacters(in: .whitespaces)
    }

    /// No `Origin` (same-origin GET navigations, curl) or our own.
    private func isSameOrigin(_ request: Request) -> Bool {
        guard let origin = request.headers[.origin] else {
            return request.headers[HTTPField.Name("Sec-Fetch-Site")!].map { $0 == "same-origin" || $0 == "none" } ?? true
        }
        guard let authority = request.head.authority else { return false }
        return origin.lowercased() == "http://\(authority.lowercased())"
    }

    /// `example.org:7207` → `example.org`; `[::1]:7207` → `[::1]`.
    static func hostName(of authority: String) -> String {
        let lower = authority.lowercased()
        if lower.hasPrefix("[") { return lower.firstIndex(of: "]").map { String(lower[...$0]) } ?? lower }
        if let colon = lower.lastIndex(of: ":") { return String(lower[..<colon]) }
        return lower
    }

    /// Whether `host` (as ``hostName(of:)`` gives it) is one of `allowedHosts` or an IPv4 or bracketed IPv6 address.
    static func answers(to host: String, allowedHosts: Set<String>) -> Bool {
        if allowedHosts.contains(host) { return true }
        if host.hasPrefix("["), host.hasSuffix("]") {
            var address = in6_addr()
            // A zone (`%eth0`, written `%25eth0` in a URL) names an interface, not a host.
            let literal = host.dropFirst().dropLast().split(separator: "%", maxSplits: 1).first.map(String.init) ?? ""
            return inet_pton(AF_INET6, literal, &address) == 1
        }
        var address = in_addr()
        return inet_pton(AF_INET, host, &address) == 1
    }

    /// The names a request may carry in `Host`: loopback, the listen address, and the ones configured.
    static func allowedHosts(for configuration: WebConfiguration) -> Set<String> {
        allowedHosts(host: configuration.host, extraHostNames: configuration.extraHostNames)
    }

    /// The names a request to a server listening on `host` may carry in `Host`: loopback's, `host`, and `extra`.
    static func allowedHosts(host: String, extraHostNames: [String]) -> Set<String> {
        var names: Set<String> = ["localhost", "127.0.0.1", "[::1]"]
        for name in [host] + extraHostNames where !name.isEmpty {
            let lower = name.lowercased()
            names.insert(lower.contains(":") && !lower.hasPrefix("[") ? "[\(lower)]" : lower)
        }
        return names
    }
}

/// Equal strings compared without an early exit, so that the time taken says nothing about how much of a guess
/// was right (the length still shows; tokens are of a fixed length).
func constantTimeEqual(_ lhs: String, _ rhs: String) -> Bool {
    let a = Array(lhs.utf8)
    let b = Array(rhs.utf8)
    var difference = UInt8(a.count == b.count ? 0 : 1)
    for index in 0..<max(a.count, b.count) {
        difference |= (index < a.count ? a[index] : 0) ^ (index < b.count ? b[index] : 0)
    }
    return difference == 0
}
