import ArgumentParser
import Foundation
import ParleyCommandLine
import ParleyDebugger

struct Sessions: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List, delete and prune the debugger's sessions.",
        subcommands: [List.self, Delete.self, Prune.self],
        defaultSubcommand: List.self
    )
}

extension Sessions {
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list",
            abstract: "List the debugger's sessions: one per app connection (the default).",
            discussion: """
                Each session is an app connection parleyd recorded states from (or an
                imported file): its id, app name, kind (parley, or original for apps of the
                original Swift Talk debugger), when it started and ended, how many entries
                (states), log records and spans it keeps, and the size of its states.

                Examples:
                  parleyctl sessions
                  parleyctl sessions --json
                  parleyctl sessions delete 3
                  parleyctl sessions prune --older-than 7d
                """
        )

        @OptionGroup var daemon: DaemonOptions

        @OptionGroup var format: OutputOptions

        func run() async throws {
            Pager.start(unless: format.display.noPager)
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
            let rows = sessions.map { session in
                [
                    String(session.id), session.appName, session.host ?? "-",
                    session.imported ? "\(session.kind) (imported)" : session.kind.rawValue, Table.time(session.started),
                    session.ended.map(Table.time) ?? "open", String(session.entryCount), String(session.logCount), String(session.spanCount),
                    Table.bytes(session.bytes),
                ]
            }
            Table.print(
                ["SESSION", "APP", "HOST", "KIND", "STARTED", "ENDED", "ENTRIES", "LOGS", "SPANS", "SIZE"], rows, caps: [8, 32, 40, 20, 25, 25, 8, 9, 9])
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete ended sessions with all their entries.",
            discussion: """
                A session whose app is still connected is refused: it is still recording.

                Examples:
                  parleyctl sessions delete 3
                  parleyctl sessions delete 3 4 7
                """
        )

        @Argument(help: "The sessions to delete (parleyctl sessions lists them).", completion: LiveCompletions.sessionIDs)
        var ids: [Int64]

        @OptionGroup var daemon: DaemonOptions

        @OptionGroup var format: OutputOptions

        func run() async throws {
            try await daemon.session { client in
                for id in ids {
                    let deleted = try await client.control(DebuggerControl.DeleteSessions(session: id), expecting: DebuggerControl.Deleted.self)
                    if format.json { Output.json(deleted) } else { Output.line("deleted session \(id)") }
                }
            }
        }
    }

    struct Prune: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete every session that ended longer ago than a given time.",
            discussion: """
                Sessions still recording are kept, however old.

                Examples:
                  parleyctl sessions prune --older-than 7d
                  parleyctl sessions prune --older-than 12h --json
                """
        )

        @Option(help: ArgumentHelp("Sessions that ended before this long ago: 90s, 30m, 12h, 7d.", valueName: "duration"))
        var olderThan: String

        @OptionGroup var daemon: DaemonOptions

        @OptionGroup var format: OutputOptions

        func validate() throws {
            guard TimeArgument.duration(olderThan) != nil else {
                throw ValidationError("--older-than: \"\(olderThan)\" is not a duration; write a number with s, m, h or d (7d, 12h)")
            }
        }

        func run() async throws {
            let cutoff = Date().addingTimeInterval(-(TimeArgument.duration(olderThan) ?? 0))
            let deleted = try await daemon.ask(DebuggerControl.DeleteSessions(endedBefore: cutoff), expecting: DebuggerControl.Deleted.self)
            if format.json {
                Output.json(deleted)
            } else if deleted.sessions.isEmpty {
                Output.line("no session ended before \(Table.time(cutoff)); nothing deleted")
            } else {
                Output.line("deleted \(deleted.sessions.count) session\(deleted.sessions.count == 1 ? "" : "s"): " + deleted.sessions.map(String.init).joined(separator: ", "))
            }
        }
    }
}

/// Times and durations as people type them on the command line.
enum TimeArgument {
    /// `90`, `90s`, `30m`, `12h`, `7d` → seconds; not negative.
    static func duration(_ text: String) -> TimeInterval? {
        DurationText.seconds(text).flatMap { $0 >= 0 ? $0 : nil }
    }

    /// A point in time: RFC 3339 (`2026-11-25T17:00:00Z`), local `2026-11-25 17:00[:00]` or `17:00[:00]` (today),
    /// or a duration meaning that long ago (`10m`).
    static func date(_ text: String, now: Date = Date()) -> Date? {
        if let seconds = duration(text) { return now.addingTimeInterval(-seconds) }
        if let date = try? Date(text, strategy: .iso8601) { return date }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = .current
        for format in ["yyyy-MM-dd HH:mm:ss", "yyyy-MM-dd HH:mm", "yyyy-MM-dd'T'HH:mm:ss", "yyyy-MM-dd"] {
            formatter.dateFormat = format
            if let date = formatter.date(from: text) { return date }
        }
        for format in ["HH:mm:ss", "HH:mm"] {
            formatter.dateFormat = format
            guard let time = formatter.date(from: text) else { continue }
            let calendar = Calendar.current
            let parts = calendar.dateComponents([.hour, .minute, .second], from: time)
            return calendar.date(bySettingHour: parts.hour ?? 0, minute: parts.minute ?? 0, second: parts.second ?? 0, of: now)
        }
        return nil
    }
}

/// Plain-text columns for parleyctl's listings. Every cell is escaped for the terminal first; a cell wider than its
/// column is cut with `…`, so one long name (an original-framing app's "debugger app at 127.0.0.1:59354", an IPv6
/// address with its interface) never pushes the columns after it out of line. The last column is never cut.
enum Table {
    /// One row in columns of fixed widths (each including the gap after it): for listings that stream, whose
    /// later rows are not known when the first is printed.
    static func row(_ cells: [String], widths: [Int]) -> String {
        let cells = cells.map { $0.escapedForPeople(maximumBytes: 160) }
        return cells.indices.map { index in
            guard index < widths.count, index < cells.count - 1 else { return cells[index] }
            let width = max(widths[index] - 2, 1)
            return cut(cells[index], to: width).padding(toLength: widths[index], withPad: " ", startingAt: 0)
        }.joined().trimmingCharacters(in: .whitespaces)
    }

    /// A heading and rows in columns as wide as their widest cell, up to `caps`, two spaces apart.
    static func print(_ heading: [String], _ rows: [[String]], caps: [Int]) {
        let all = ([heading] + rows).map { $0.map { $0.escapedForPeople(maximumBytes: 160) } }
        let last = heading.count - 1
        let widths = heading.indices.map { column in
            min(all.map { $0[column].count }.max() ?? 0, column < caps.count ? caps[column] : .max)
        }
        for (index, row) in all.enumerated() {
            let line = row.indices.map { column in
                column == last ? row[column] : cut(row[column], to: widths[column]).padding(toLength: widths[column], withPad: " ", startingAt: 0)
            }.joined(separator: "  ").trimmingCharacters(in: .whitespaces)
            if index == 0 { Output.line(line, style: .heading) } else { Output.line(line) }
        }
    }

    static func cut(_ cell: String, to width: Int) -> String {
        cell.count <= width ? cell : String(cell.prefix(max(width - 1, 0))) + "…"
    }

    /// Local time, to the second, with its offset from UTC (`2026-11-25 18:05:12+01:00`): unambiguous when
    /// read on another machine or pasted into a report. JSON output carries RFC 3339 in UTC instead.
    static func time(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ssxxx"
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
