import ArgumentParser
import Foundation
import ParleyDebugger

struct Import: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Read a file written by `parleyctl export` into the history, as a new session.",
        discussion: """
            Every line is checked; an error names the line and nothing is imported.
            The new session is marked imported; its entries get new sequence numbers.

            Examples:
              parleyctl import session-3.jsonl
            """
    )

    @Argument(help: "The export file (- for standard input).")
    var file: String

    @OptionGroup var daemon: DaemonOptions

    @OptionGroup var format: OutputOptions

    /// Pieces sent per request: whole lines, well under the control socket's frame limit once JSON-escaped.
    static let pieceBytes = 4 << 20

    func run() async throws {
        let contents: Data
        do {
            contents = try await InputFiles.contents(of: file)
        } catch {
            throw CtlFailure(.error, "cannot read \(file): \(error.localizedDescription)")
        }
        let pieces = Self.pieces(of: contents)
        guard !pieces.isEmpty else { throw CtlFailure(.error, "\(file) is empty") }
        let (session, alreadyInHistory) = try await daemon.session { client -> (SessionSummary?, Bool) in
            var progress: String?
            var finished: SessionSummary?
            for (index, piece) in pieces.enumerated() {
                let reply = try await client.control(
                    DebuggerControl.Import(lines: String(decoding: piece, as: UTF8.self), progress: progress, last: index == pieces.count - 1),
                    expecting: DebuggerControl.ImportProgress.self, timeout: .seconds(60)
                )
                // Importing is idempotent: parleyd still checks every line of a session it has, then says so.
                if reply.alreadyInHistory == true { return (reply.session, true) }
                progress = reply.progress
                finished = reply.session
            }
            return (finished, false)
        }
        guard let session else { throw CtlFailure(.error, "parleyd did not confirm the import") }
        if format.json {
            Output.json(session)
        } else if alreadyInHistory {
            Output.line("imported before as session \(session.id) (\(session.appName.shown), \(session.entryCount) entries); nothing imported")
        } else {
            Output.line("imported as session \(session.id) (\(session.appName.shown), \(session.entryCount) entries)")
        }
    }

    /// Splits at line ends into pieces of about ``pieceBytes`` (a longer line is a piece of its own).
    static func pieces(of data: Data) -> [Data] {
        var pieces: [Data] = []
        var start = data.startIndex
        while start < data.endIndex {
            var end = min(start + pieceBytes, data.endIndex)
            if end < data.endIndex {
                if let newline = data[start..<end].lastIndex(of: UInt8(ascii: "\n")) {
                    end = newline + 1
                } else {
                    end = data[end...].firstIndex(of: UInt8(ascii: "\n")).map { $0 + 1 } ?? data.endIndex
                }
            }
            pieces.append(data[start..<end])
            start = end
        }
        return pieces
    }
}
