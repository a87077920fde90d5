import Foundation
import Hummingbird
import ParleyDebugger
import ParleyTelemetry

/// `/api/sessions/:id/timeline…`: a session's states, log records and spans merged by time (filtered, paged by
/// position), where one item falls in that list, and the state the app had at a moment; `/api/logs/:id` and
/// `/api/spans/:id`: one record each.
struct TimelineRoutes<Context: RequestContext>: Sendable {
    let backend: any WebDebuggerBackend

    static var pageLimit: Int { 1000 }
    /// The longest label pattern or search text taken: the store compiles both for every request.
    static var maximumFilterBytes: Int { 1024 }

    var routes: RouteCollection<Context> {
        let routes = RouteCollection(context: Context.self)
        routes.get("sessions/:id/timeline") { request, context in
            let query = try Self.query(request.uri.queryParameters, session: try RequestValues.sessionID(context.parameters))
            let page = try await backend.timeline(query)
            return try APIAnswer.json(TimelinePage(items: page.items.map(WebTimelineItem.init), total: page.total, offset: query.offset))
        }
        routes.get("sessions/:id/timeline/position") { request, context in
            let session = try RequestValues.sessionID(context.parameters)
            let parameters = request.uri.queryParameters
            let (kind, id) = try Self.item(parameters)
            let query = try Self.query(parameters, session: session)
            guard let found = try await backend.timelinePosition(kind: kind, id: id, query: query) else {
                throw WebProblem.notFound("there is no \(Self.noun(kind)) \(id) in session \(session)")
            }
            return try APIAnswer.json(EntryPosition(offset: found.offset, matches: found.matches))
        }
        routes.get("sessions/:id/state-at") { request, context in
            let session = try RequestValues.sessionID(context.parameters)
            guard let time = try Self.time(request.uri.queryParameters, "time") else {
                throw WebProblem.badRequest("give the moment: ?time=NANOSECONDS since 1970 (or an ISO 8601 time)")
            }
            return try APIAnswer.json(StateAt(entry: try await backend.state(before: time, session: session)))
        }
        routes.get("logs/:id") { _, context in
            try APIAnswer.json(WebLogRecord(stored: try await backend.logRecord(try Self.id(context.parameters, "a log record's id"))))
        }
        routes.get("spans/:id") { _, context in
            try APIAnswer.json(WebSpan(stored: try await backend.span(try Self.id(context.parameters, "a span's id"))))
        }
        return routes
    }

    static func id(_ parameters: Parameters, _ what: String) throws -> Int64 {
        guard let id = parameters.get("id", as: Int64.self) else { throw WebProblem.notFound("\(what) is a number") }
        return id
    }

    static func noun(_ kind: TimelineItem.Kind) -> String {
        switch kind {
        case .state: "entry"
        case .log: "log record"
        case .span: "span"
        }
    }

    /// `kind=state|log|span&id=N`: the item a position is asked for.
    static func item(_ query: Parameters) throws -> (TimelineItem.Kind, Int64) {
        guard let kindText = value(query, "kind"), let id = try RequestValues.integer(query, "id") else {
            throw WebProblem.badRequest("give the item: ?kind=state|log|span&id=N (an entry's sequence, a log record's or a span's id)")
        }
        guard let kind = TimelineItem.Kind(rawValue: kindText) else {
            throw WebProblem.badRequest("kind is state, log or span, not \"\(kindText.prefix(64))\"")
        }
        return (kind, id)
    }

    /// `kinds=state,log,span&level=L&label=GLOB&q=TEXT&since=T&offset=N&limit=N` as the store's query.
    static func query(_ query: Parameters, session: Int64) throws -> TimelineQuery {
        var kinds = Set<TimelineItem.Kind>()
        for name in (value(query, "kinds") ?? "").split(separator: ",", omittingEmptySubsequences: true) {
            guard let kind = TimelineItem.Kind(rawValue: name.trimmingCharacters(in: .whitespaces)) else {
                throw WebProblem.badRequest("kinds lists state, log and span (comma-separated), not \"\(name.prefix(64))\"")
            }
            kinds.insert(kind)
        }
        var severity: LogSeverity?
        if let level = value(query, "level") {
            guard let known = LogSeverity(rawValue: level) else {
                throw WebProblem.badRequest(
                    "level is one of \(LogSeverity.allCases.map(\.rawValue).joined(separator: ", ")), not \"\(level.prefix(64))\"")
            }
            severity = known
        }
        let label = try bounded(query, "label")
        let text = try bounded(query, "q")
        return TimelineQuery(
            session: session, kinds: kinds, minimumSeverity: severity, label: label, text: text, since: try time(query, "since"),
            offset: try RequestValues.clamped(query, "offset", default: 0, max: Int.max, min: 0),
            limit: try RequestValues.clamped(query, "limit", default: 200, max: pageLimit))
    }

    /// A time given as nanoseconds since 1970, or as an ISO 8601 time (with or without fractional seconds).
    static func time(_ query: Parameters, _ name: String) throws -> UnixNanos? {
        guard let text = value(query, name) else { return nil }
        if let nanos = UInt64(text) { return UnixNanos(nanos) }
        for options in [ISO8601DateFormatter.Options.withInternetDateTime, [.withInternetDateTime, .withFractionalSeconds]] {
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = options
            if let date = formatter.date(from: text) { return UnixNanos(NanosText.milliseconds(of: date)) }
        }
        throw WebProblem.badRequest(
            "\(name) is nanoseconds since 1970 or an ISO 8601 time such as 2026-11-25T17:10:51.035Z, not \"\(text.prefix(64))\"")
    }

    private static func value(_ query: Parameters, _ name: String) -> String? {
        query.first { $0.key == name }.map { String($0.value) }.flatMap { $0.isEmpty ? nil : $0 }
    }

    private static func bounded(_ query: Parameters, _ name: String) throws -> String? {
        guard let text = value(query, name) else { return nil }
        guard text.utf8.count <= maximumFilterBytes else {
            throw WebProblem.badRequest("\(name) is at most \(maximumFilterBytes) bytes; this one has \(text.utf8.count)")
        }
        return text
    }
}
