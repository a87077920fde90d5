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

    private func importHistory(_ request: Request) async throws -> Response {
        let importer = backend.beginImport()
        // Whole lines to the importer; a line split across two pieces of the body waits for the rest.
        var pending = ByteBuffer()
        for try await piece in request.body {
            var piece = piece
            pending.writeBuffer(&piece)
            guard let lastNewline = pending.readableBytesView.lastIndex(of: UInt8(ascii: "\n")) else { continue }
            let lines = pending.readSlice(length: lastNewline - pending.readerIndex + 1)!
            try await importer.add(lines: lines)
            pending.discardReadBytes()
        }
        if pending.readableBytes > 0 { try await importer.add(lines: pending) }
        let (session, again) = try await importer.finish()
        return try APIAnswer.json(ImportAnswer(session: session, alreadyInHistory: again), status: again ? .ok : .created)
    }
}
