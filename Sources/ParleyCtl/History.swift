import ArgumentParser
import Parley
import ParleyDebugger
import Synchronization

struct History: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List recorded states: sequence number, time, session, action and sizes.",
        discussion: """
            Entries are listed oldest first, all sessions unless --session. Actions can
            be filtered by a glob pattern on the action text (--action 'list.*') or by a
            filter saved by name in parleyd's configuration (--filter noisy; see
            `parleyctl filters`). Listing never loads states or screenshots; use
            `parleyctl show N` for one entry.

            With --follow, parleyctl keeps running after the listing and prints each
            entry as parleyd records it, until Ctrl-C (exit 0), --limit entries in all
            (exit 0), or parleyd stops (exit 5). No entry is missed or printed twice.

            Examples:
              parleyctl history
              parleyctl history --session 3 --action 'item.*'
              parleyctl history --filter quiet --json
              parleyctl history --follow --after 120
              parleyctl history --last 20 --follow
              parleyctl history --since 10m --session 3
            """
    )

    @Option(help: ArgumentHelp("Only the entries of the debugger session with this id (parleyctl sessions lists them).", valueName: "id"), completion: LiveCompletions.sessionIDs)
    var session: Int64?

    @Option(help: ArgumentHelp("A filter saved by name in parleyd's configuration (actionFilters).", valueName: "name"))
    var filter: String?

    @Option(help: ArgumentHelp("Only actions whose text matches this glob (* and ?).", valueName: "pattern"))
    var action: String?

    @Option(help: ArgumentHelp("Start after this sequence number.", valueName: "sequence"))
    var after: Int64?

    @Option(help: "Print at most this many entries (with --follow: then exit).")
    var limit: Int?

    @Option(help: ArgumentHelp("Only the last N entries (of those the other options select).", valueName: "N"))
    var last: Int?

    @Option(help: ArgumentHelp("Only entries recorded since: 10m (ago), 17:05, 2026-11-25 17:05, RFC 3339.", valueName: "time"))
    var since: String?

    @Flag(help: "After the listing, print entries as they are recorded.")
    var follow = false

    @OptionGroup var daemon: DaemonOptions

    @OptionGroup var format: OutputOptions

    func validate() throws {
        if filter != nil && action != nil { throw ValidationError("give --filter or --action, not both") }
        if let action {
            do { _ = try ActionGlob(action) } catch { throw ValidationError("--action: \(error)") }
        }
        if let limit, limit <= 0 { throw ValidationError("--limit must be positive") }
        if let last, last <= 0 { throw ValidationError("--last must be positive") }
        if last != nil && after != nil { throw ValidationError("give --last or --after, not both") }
        if let since, TimeArgument.date(since) == nil {
            throw ValidationError("--since: \"\(since)\" is not a time; write 10m (ago), 17:05, \"2026-11-25 17:05\" or 2026-11-25T17:05:00Z")
        }
    }

    var textFilter: ActionTextFilter? { filter.map(ActionTextFilter.named) ?? action.map(ActionTextFilter.pattern) }

    func run() async throws {
        // A followed history never ends: it goes straight to the terminal, like journalctl -f.
        Pager.start(unless: follow || format.display.noPager)
        // Printed once parleyd has answered: a command that fails (no parleyd, an unknown session or filter)
        // prints nothing on standard output, only its error.
        let heading = Heading(json: format.json)
        if follow {
            try await listAndFollow(heading: heading)
        } else {
            try await daemon.session { client in _ = try await list(client, upTo: nil, heading: heading) }
        }
    }

    /// Prints the recorded entries after `--after`, up to `last` when given, at most `--limit`. Returns how many
    /// it printed.
    private func list(_ client: DaemonClient, upTo last: Int64?, heading: Heading) async throws -> Int {
        var printed = 0
        var after = self.after
        let since = self.since.flatMap { TimeArgument.date($0) }
        // --last N: skip all but the last N of the matching entries; `total` of a one-entry page says how many.
        var offset: Int?
        if let wanted = self.last {
            let probe = DebuggerControl.History(session: session, filter: textFilter, after: after, limit: 1, since: since)
            let total = try await client.control(probe, expecting: DebuggerControl.Entries.self).page.total
            offset = max(0, total - wanted)
        }
        repeat {
            let pageSize = min(DebuggerControl.History.pageSize, (limit ?? .max) - printed)
            let request = DebuggerControl.History(
                session: session, filter: textFilter, after: after, limit: pageSize, offset: offset, since: since)
            offset = nil
            let page = try await client.control(request, expecting: DebuggerControl.Entries.self).page
            heading.showOnce()
            for entry in page.items {
                if let last, entry.sequence > last { return printed }
                printEntry(entry)
                printed += 1
            }
            after = page.nextAfter
        } while after != nil && printed < (limit ?? .max)
        return printed
    }

    /// Follows first, then lists: entries recorded meanwhile come as updates, and those up to the newest one at
    /// the time the follow began are printed from the listing only.
    private func listAndFollow(heading: Heading) async throws {
        let (updates, continuation) = AsyncStream.makeStream(of: EntrySummary.self)
        let client = DaemonClient(socketPath: daemon.socketPath, name: "parleyctl", logLevel: "error")
        client.transceiver.receive(DebuggerControl.Appended.self) { appended, _ in continuation.yield(appended.entry) }
        let events = client.transceiver.peerEvents
        try await client.run { client in
            defer { continuation.finish() }
            let following = try await client.control(
                DebuggerControl.Follow(session: session, filter: textFilter), expecting: DebuggerControl.Following.self)
            // An empty history when the follow began: everything, even what is recorded while we would be listing,
            // comes as an update; a listing now would print those entries a second time.
            let listed = following.lastSequence == nil ? 0 : try await list(client, upTo: following.lastSequence, heading: heading)
            let limit = self.limit ?? .max
            guard listed < limit else { return }
            let floor = max(following.lastSequence ?? .min, after ?? .min)
            heading.showOnce()
            try await client.stream(watching: events) {
                var printed = listed
                for await entry in updates where entry.sequence > floor {
                    printEntry(entry)
                    printed += 1
                    if printed >= limit { return }
                }
            }
        }
    }

    private func printEntry(_ entry: EntrySummary) {
        if format.json {
            Output.json(entry)
        } else {
            Output.line(Table.row([
                String(entry.sequence), Table.time(entry.time), String(entry.session), entry.action,
                Table.bytes(entry.stateSize), entry.screenshotSize == 0 ? "-" : Table.bytes(entry.screenshotSize),
            ], widths: Self.widths))
        }
    }

    static let widths = [8, 26, 9, 40, 11, 10]
}

/// Prints the history table's heading the first time it is asked, never in JSON output.
private final class Heading: Sendable {
    private let pending: Mutex<Bool>

    init(json: Bool) { pending = Mutex(!json) }

    func showOnce() {
        guard pending.withLock({ pending in defer { pending = false }; return pending }) else { return }
        Output.line(Table.row(["SEQ", "TIME", "SESSION", "ACTION", "STATE", "SCREENSHOT"], widths: History.widths), style: .heading)
    }
}
