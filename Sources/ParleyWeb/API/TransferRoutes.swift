import Hummingbird
import NIOCore

/// `GET /api/sessions/:id/export`: a session as a JSON-lines download. `POST /api/import`: such a file read back
/// into the history (201), or the session it was imported as before (200).
struct TransferRoutes<Context: RequestContext>: Sendable {
    let backend: any WebDebuggerBackend

    var routes: RouteCollection<Context> {
        let routes = RouteCollection(context: Context.self)
        routes.get("sessions/:id/export") { _, context in try await export(session: try RequestValues.sessionID(context.parameters)) }
        routes.post("import") { request, _ in try await importHistory(request) }
        return routes
    }

    private func export(session: Int64) async throws -> Response {
        // Before the answer starts: a missing session is a 404, not a truncated download.
        let summary = try await backend.session(session)
        var headers = HTTPFields()
        headers[.contentType] = "application/x-ndjson"
        headers[.contentDisposition] = "attachment; filename=\"parley-session-\(summary.summary.id).jsonl\""
        headers[.cacheControl] = "no-store"
        let backend = self.backend
        return Response(status: .ok, headers: headers, body: ResponseBody { writer in
            try await backend.export(session: session) { piece in try await writer.write(piece) }
            try await writer.finish(nil)
        })
    }

    /// The largest import body (the history's default size, `historyMaxBytes`) and line (a 64 MiB state with a
    /// screenshot, in base64, and room to spare); past either, 413.
    var maximumImportBytes = 1 << 30
    var maximumLineBytes = 256 << 20

    private func importHistory(_ request: Request) async throws -> Response {
        if let length = request.headers[.contentLength].flatMap(Int.init), length > maximumImportBytes {
            throw importTooLarge
        }
        let importer = backend.beginImport()
        var splitter = LineSplitter(maximumBodyBytes: maximumImportBytes, maximumLineBytes: maximumLineBytes)
        do {
            for try await piece in request.body {
                if let lines = try splitter.add(piece) { try await importer.add(lines: lines) }
            }
        } catch LineSplitter.Refusal.bodyTooLarge {
            throw importTooLarge
        } catch LineSplitter.Refusal.lineTooLong {
            throw WebProblem(
                .contentTooLarge, "Line too long",
                detail: "a line of the file is longer than \(maximumLineBytes >> 20) MiB; this is not an export of parleyd's history")
        }
        if let last = splitter.rest() { try await importer.add(lines: last) }
        let (session, again) = try await importer.finish()
        return try APIAnswer.json(ImportAnswer(session: session, alreadyInHistory: again), status: again ? .ok : .created)
    }

    private var importTooLarge: WebProblem {
        WebProblem(
            .contentTooLarge, "Too large",
            detail: "an import through the web debugger is at most \(maximumImportBytes >> 20) MiB")
    }
}
