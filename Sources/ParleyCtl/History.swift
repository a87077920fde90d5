import ArgumentParser
import ParleyDebugger

struct History: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List recorded states: sequence number, time, session, action and sizes.",
        discussion: """
            Entries are listed oldest first, all sessions unless --session. Actions can
            be filtered by a glob pattern on the action text (--action 'list.*') or by a
            filter saved by name in parleyd's configuration (--filter noisy; see
            `parleyctl filters`). Listing never loads states or screenshots; use
            `parleyctl show N` for one entry.

            Examples:
              parleyctl history
              parleyctl history --session 3 --action 'item.*'
              parleyctl history --filter quiet --json
            """
    )

    @Option(help: "Only this session's entries.")
    var session: Int64?

    @Option(help: ArgumentHelp("A filter saved by name in parleyd's configuration (actionFilters).", valueName: "name"))
    var filter: String?

    @Option(help: ArgumentHelp("Only actions whose text matches this glob (* and ?).", valueName: "pattern"))
    var action: String?

    @Option(help: ArgumentHelp("Start after this sequence number.", valueName: "sequence"))
    var after: Int64?

    @Option(help: "Print at most this many entries.")
    var limit: Int?

    @OptionGroup var daemon: DaemonOptions

    @OptionGroup var format: OutputOptions

    func validate() throws {
        if filter != nil && action != nil { throw ValidationError("give --filter or --action, not both") }
        if let action {
            do { _ = try ActionGlob(action) } catch { throw ValidationError("--action: \(error)") }
        }
        if let limit, limit <= 0 { throw ValidationError("--limit must be positive") }
    }

    func run() async throws {
        let textFilter: ActionTextFilter? = filter.map(ActionTextFilter.named) ?? action.map(ActionTextFilter.pattern)
        var printed = 0
        if !format.json {
            Output.line(Table.row(["SEQ", "TIME", "SESSION", "ACTION", "STATE", "SCREENSHOT"], widths: Self.widths))
        }
        try await daemon.session { client in
            var after = self.after
            repeat {
                let pageSize = min(500, (limit ?? .max) - printed)
                let request = DebuggerControl.History(session: session, filter: textFilter, after: after, limit: pageSize)
                let page = try await client.control(request, expecting: DebuggerControl.Entries.self).page
                for entry in page.items {
                    if format.json {
                        Output.json(entry)
                    } else {
                        Output.line(Table.row([
                            String(entry.sequence), Table.time(entry.time), String(entry.session), entry.action,
                            Table.bytes(entry.stateSize), entry.screenshotSize == 0 ? "-" : Table.bytes(entry.screenshotSize),
                        ], widths: Self.widths))
                    }
                }
                printed += page.items.count
                after = page.nextAfter
            } while after != nil && printed < (limit ?? .max)
        }
    }

    static let widths = [8, 20, 9, 40, 11, 10]
}
