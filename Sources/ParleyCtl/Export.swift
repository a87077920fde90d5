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

    func run() async throws {
        let handle: FileHandle
        if file == "-" {
            handle = FileHandle.standardOutput
        } else {
            try OutputFile.refuseToOverwrite(file, force: force)
            guard FileManager.default.createFile(atPath: file, contents: nil), let opened = FileHandle(forWritingAtPath: file) else {
                throw CtlFailure(.error, "cannot create \(file)")
            }
            handle = opened
        }
        defer { if file != "-" { try? handle.close() } }
        let entries = try await daemon.session { client in
            var cursor: String?
            var lines = 0
            repeat {
                let chunk = try await client.control(
                    DebuggerControl.Export(session: session, cursor: cursor), expecting: DebuggerControl.ExportChunk.self,
                    timeout: .seconds(60)
                )
                try handle.write(contentsOf: Data(chunk.lines.utf8))
                lines += chunk.lines.utf8.count(where: { $0 == UInt8(ascii: "\n") })
                cursor = chunk.cursor
            } while cursor != nil
            return lines - 1
        }
        if file != "-" { Output.error("session \(session): \(entries) entries written to \(file)") }
    }
}
