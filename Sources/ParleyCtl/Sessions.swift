import ArgumentParser
import Foundation
import ParleyDebugger

struct Sessions: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the debugger's sessions: one per app connection, newest first.",
        discussion: """
            Each session is an app connection parleyd recorded states from (or an
            imported file): its id, app name, kind (parley, or original for apps of the
            original Swift Talk debugger), when it started and ended, how many entries
            it keeps and their size.

            Examples:
              parleyctl sessions
              parleyctl sessions --json
            """
    )

    @OptionGroup var daemon: DaemonOptions

    @OptionGroup var format: OutputOptions

    func run() async throws {
        var sessions: [SessionSummary] = []
        var after: Int64?
        try await daemon.session { client in
            repeat {
                let page = try await client.control(DebuggerControl.Sessions(after: after), expecting: DebuggerControl.SessionList.self)
                sessions += page.sessions
                after = page.nextAfter
            } while after != nil
        }
        if format.json {
            sessions.forEach { Output.json($0) }
            return
        }
        guard !sessions.isEmpty else {
            Output.line("no sessions yet: apps that send states to parleyd start one each")
            return
        }
        Output.line(Table.row(["SESSION", "APP", "KIND", "STARTED", "ENDED", "ENTRIES", "SIZE"], widths: Self.widths))
        for session in sessions {
            let kind = session.imported ? "\(session.kind) (imported)" : session.kind.rawValue
            Output.line(Table.row([
                String(session.id), session.appName, kind, Table.time(session.started),
                session.ended.map(Table.time) ?? "open", String(session.entryCount), Table.bytes(session.bytes),
            ], widths: Self.widths))
        }
    }

    static let widths = [8, 24, 18, 20, 20, 8, 10]
}

/// Plain-text columns for the debugger's listings.
enum Table {
    static func row(_ cells: [String], widths: [Int]) -> String {
        zip(cells.map { $0.escapedForPeople(maximumBytes: 160) }, widths).map { cell, width in
            cell.count >= width ? cell + " " : cell.padding(toLength: width, withPad: " ", startingAt: 0)
        }.joined().trimmingCharacters(in: .whitespaces)
    }

    /// Local time, to the second.
    static func time(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss"
        return formatter.string(from: date)
    }

    static func bytes(_ count: some BinaryInteger) -> String {
        let value = Double(count)
        switch value {
        case ..<1024: return "\(count) B"
        case ..<(1024 * 1024): return String(format: "%.1f KiB", value / 1024)
        case ..<(1024 * 1024 * 1024): return String(format: "%.1f MiB", value / 1_048_576)
        default: return String(format: "%.2f GiB", value / 1_073_741_824)
        }
    }
}
