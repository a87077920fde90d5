import Foundation
import Hummingbird
import NIOCore
import NIOFoundationCompat
import ParleyDebugger

/// The numbers and filters a request names in its path and query, checked: a malformed one is a 404 (in the path)
/// or a 400 (in the query) that says what was expected.
enum RequestValues {
    static func sessionID(_ parameters: Parameters) throws -> Int64 {
        guard let id = parameters.get("id", as: Int64.self) else { throw WebProblem.notFound("a session id is a number") }
        return id
    }

    static func sequence(_ parameters: Parameters) throws -> Int64 {
        guard let sequence = parameters.get("seq", as: Int64.self) else { throw WebProblem.notFound("an entry's sequence is a number") }
        return sequence
    }

    static func integer(_ query: Parameters, _ name: String) throws -> Int64? {
        guard let text = query.first(where: { $0.key == name })?.value, !text.isEmpty else { return nil }
        guard let value = Int64(text) else { throw WebProblem.badRequest("\(name) must be a whole number, not \"\(text)\"") }
        return value
    }

    static func clamped(_ query: Parameters, _ name: String, default: Int, max: Int, min: Int = 1) throws -> Int {
        guard let value = try integer(query, name) else { return `default` }
        return Swift.min(Swift.max(Int(clamping: value), min), max)
    }

    /// `filter=NAME`, `pattern=GLOB`, `mode=show|hide` as one filter: the entries the named filter and the pattern
    /// both match (either alone when one is given) are the ones shown, or with `mode=hide` the ones hidden.
    static func filter(_ query: Parameters, named filters: [String: ActionTextFilter]) throws -> ActionTextFilter? {
        func value(_ name: String) -> String? { query.first { $0.key == name }.map { String($0.value) }.flatMap { $0.isEmpty ? nil : $0 } }
        let mode = value("mode") ?? "show"
        guard mode == "show" || mode == "hide" else { throw WebProblem.badRequest("mode is show or hide, not \"\(mode)\"") }
        var parts: [ActionTextFilter] = []
        if let name = value("filter") {
            guard filters[name] != nil else {
                let known = filters.keys.sorted()
                throw WebProblem.badRequest(
                    "there is no filter named \"\(name)\"" + (known.isEmpty ? "; none is configured" : "; configured: \(known.joined(separator: ", "))"))
            }
            parts.append(.named(name))
        }
        if let pattern = value("pattern") {
            do {
                _ = try ActionGlob(pattern)
            } catch {
                // The glob's own text names the pattern and what is wrong with it: said once.
                throw WebProblem.badRequest("\(error)")
            }
            parts.append(.pattern(pattern))
        }
        let matched: ActionTextFilter
        switch parts.count {
        case 0: return nil
        case 1: matched = parts[0]
        // Both: neither may reject the entry.
        default: matched = .not(.anyOf(parts.map { .not($0) }))
        }
        return mode == "hide" ? .not(matched) : matched
    }

    /// The largest JSON body a request that is not an import may carry.
    static let maximumBodyBytes = 64 << 10

    /// A JSON body of at most ``maximumBodyBytes`` (413 past it, without reading more than that); `problem` when it
    /// does not decode, or when it is empty and `empty` is nil.
    static func body<Body: Decodable>(
        _ request: Request, as type: Body.Type, empty: Body? = nil, problem: @autoclosure () -> WebProblem
    ) async throws -> Body {
        let tooLarge = WebProblem(.contentTooLarge, "Too large", detail: "a request body here is at most \(maximumBodyBytes >> 10) KiB of JSON")
        if let length = request.headers[.contentLength].flatMap(Int.init), length > maximumBodyBytes { throw tooLarge }
        var request = request
        let body: ByteBuffer
        do {
            body = try await request.collectBody(upTo: maximumBodyBytes)
        } catch is NIOTooManyBytesError {
            throw tooLarge
        }
        if body.readableBytes == 0, let empty { return empty }
        do {
            return try JSONDecoder().decode(Body.self, from: body)
        } catch {
            throw problem()
        }
    }
}
