import ArgumentParser
import Foundation
import ParleyDebugger

struct Export: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write a session's history to a file, as JSON lines.",
        discussion: """
            The format (docs/debugger.md): a header line describing the session, then
            one line per entry with its action, time, the state embedded exactly as
            recorded and the screenshot in base64. `parleyctl import` reads it back,
            on this machine or another. FILE - writes to standard output; an existing
            FILE is kept unless --force is given.

            Examples:
              parleyctl export 3 session-3.jsonl
            """
    )

    @Argument(help: "The session (parleyctl sessions lists them).", completion: LiveCompletions.sessionIDs)
    var session: Int64

    @Argument(help: "The file to write (- for standard output).")
    var file: String

    @Flag(help: "Overwrite FILE if it exists.")
    var force = false

    @OptionGroup var daemon: DaemonOptions

    @OptionGroup var display: DisplayOptions

    /// To a file, the export is written beside it and takes its place only when complete (``PendingFile``): a
    /// failed export (no such session, parleyd gone) leaves an existing FILE as it was and creates none. To
    /// standard output, chunks go out as they come, through ``Output`` (a reader gone is a quiet end). Interrupted
    /// (Ctrl-C, SIGTERM), it removes the partial file before it ends (``PendingFiles``).
    func run() async throws {
        if self.file != "-" { await PendingFiles.removeOnInterrupt() }
        let file: PendingFile? = self.file == "-" ? nil : try PendingFile(replacing: self.file, force: force)
        let entries = try await daemon.session { client in
            var cursor: String?
            var lines = 0
            repeat {
                let chunk = try await client.control(
                    DebuggerControl.Export(session: session, cursor: cursor), expecting: DebuggerControl.ExportChunk.self,
                    timeout: .seconds(60)
                )
                let data = Data(chunk.lines.utf8)
                if let file { try file.write(data) } else { Output.bytes(data) }
                lines += chunk.lines.utf8.count(where: { $0 == UInt8(ascii: "\n") })
                cursor = chunk.cursor
            } while cursor != nil
            return lines - 1
        }
        if let file {
            try file.commit()
            Output.error("session \(session): \(entries) entries written to \(file.path)")
        }
    }
}
