import ArgumentParser
import Foundation
import ParleyDebugger
import ParleyTelemetry

struct Export: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write a session's history to a file, as JSON lines; or its HTTP requests as a HAR file.",
        discussion: """
            The format (docs/debugger.md): a header line describing the session, then
            one line per entry with its action, time, the state embedded exactly as
            recorded and the screenshot in base64, then the app's log records and spans.
            `parleyctl import` reads it back, on this machine or another. FILE (or -o
            FILE) - writes to standard output; an existing FILE is kept unless --force is
            given.

            With --har, the file is an HTTP Archive (HAR 1.2) of the HTTP requests the
            app made: its client spans with OpenTelemetry's HTTP attributes (method,
            URL, status, headers and sizes where the instrumentation recorded them). A
            browser's developer tools open it (Network, Import HAR). Without FILE or -o
            it goes to standard output.

            Examples:
              parleyctl export 3 session-3.jsonl
              parleyctl export --har 3 -o session-3.har
              parleyctl export --har 3 | jq '.log.entries[].request.url'
            """
    )

    @Argument(help: "The session (parleyctl sessions lists them).", completion: LiveCompletions.sessionIDs)
    var session: Int64

    @Argument(help: "The file to write (- for standard output).")
    var file: String?

    @Option(name: [.customShort("o"), .long], help: ArgumentHelp("The file to write, as FILE (- for standard output).", valueName: "file"))
    var output: String?

    @Flag(help: "Write the session's HTTP client requests as a HAR 1.2 file instead of its history.")
    var har = false

    @Flag(help: "Overwrite FILE if it exists.")
    var force = false

    @OptionGroup var daemon: DaemonOptions

    @OptionGroup var display: DisplayOptions

    /// To a file, the export is written beside it and takes its place only when complete (``PendingFile``): a
    /// failed export (no such session, parleyd gone) leaves an existing FILE as it was and creates none. To
    /// standard output, chunks go out as they come, through ``Output`` (a reader gone is a quiet end). Interrupted
    /// (Ctrl-C, SIGTERM), it removes the partial file before it ends (``PendingFiles``).
    func validate() throws {
        if file != nil && output != nil { throw ValidationError("give FILE or -o FILE, not both") }
        if file == nil && output == nil && !har { throw ValidationError("give the FILE to write (- for standard output)") }
    }

    /// Where to write; `-` (and, for a HAR, nothing given) is standard output.
    private var destination: String { file ?? output ?? "-" }

    func run() async throws {
        if har {
            try await writeHAR()
            return
        }
        if destination != "-" { await PendingFiles.removeOnInterrupt() }
        let file: PendingFile? = destination == "-" ? nil : try PendingFile(replacing: destination, force: force)
        let header = try await daemon.session { client in
            var cursor: String?
            var header: Substring?
            repeat {
                let chunk = try await client.control(
                    DebuggerControl.Export(session: session, cursor: cursor), expecting: DebuggerControl.ExportChunk.self,
                    timeout: .seconds(60)
                )
                let data = Data(chunk.lines.utf8)
                if let file { try file.write(data) } else { Output.bytes(data) }
                if header == nil { header = chunk.lines.split(separator: "\n", maxSplits: 1).first }
                cursor = chunk.cursor
            } while cursor != nil
            return header.map(String.init) ?? ""
        }
        if let file {
            try file.commit()
            Output.error("session \(session): \(Self.contents(ofHeader: header)) written to \(file.path)")
        }
    }

    /// `15 entries, 120 log records and 8 spans`, as the export's header counts them.
    static func contents(ofHeader header: String) -> String {
        let fields = (try? JSONSerialization.jsonObject(with: Data(header.utf8)) as? [String: Any]) ?? [:]
        func count(_ key: String, _ one: String, _ many: String) -> String? {
            guard let number = fields[key] as? Int else { return nil }
            return "\(number) \(number == 1 ? one : many)"
        }
        let parts = [count("entries", "entry", "entries"), count("logs", "log record", "log records"), count("spans", "span", "spans")].compactMap { $0 }
        guard let last = parts.last else { return "the session" }
        return parts.count == 1 ? last : parts.dropLast().joined(separator: ", ") + " and " + last
    }

    /// Reads the session's client spans a page at a time and writes their archive.
    private func writeHAR() async throws {
        let spans = try await daemon.session { client in
            var spans: [SpanRecord] = []
            var after: Int64?
            repeat {
                let page = try await client.control(
                    TelemetryControl.Spans(session: session, kind: .client, after: after), expecting: TelemetryControl.SpanPage.self,
                    timeout: .seconds(30)
                ).page
                spans += page.items.map(\.span)
                after = page.nextAfter
            } while after != nil
            return spans
        }
        let (archive, skipped) = HAR.archive(of: spans)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        var data = try encoder.encode(archive)
        data.append(UInt8(ascii: "\n"))
        if destination == "-" {
            Output.bytes(data)
        } else {
            try OutputFile.write(data, to: destination, force: force)
        }
        let requests = archive.log.entries.count
        var note = "session \(session): \(requests) HTTP request\(requests == 1 ? "" : "s")"
        if destination != "-" { note += " written to \(destination)" }
        if skipped > 0 { note += "; \(skipped) client span\(skipped == 1 ? "" : "s") without an HTTP method and URL left out" }
        Output.error(note)
    }
}
