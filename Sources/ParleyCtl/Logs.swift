import ArgumentParser
import Foundation
import Parley
import ParleyDebugger
import ParleyTelemetry
import Synchronization

struct Logs: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the log records apps sent: time, level, label, message and metadata.",
        discussion: """
            One line per record, oldest first: its time (local, to the millisecond), its
            level, the app's name (unless APP or --session chooses the app), the logger's
            label, the message and its metadata as key=value. On a terminal the lines are
            coloured by level (not in a pipe, nor with --no-color or NO_COLOR); what an app
            wrote is shown with its control characters escaped, so that no record can
            drive the terminal.

            APP chooses an app by its name, or by the start of its peer id, across all of
            its sessions (parleyctl sessions lists them).

            With -f/--follow, parleyctl prints the last 10 records (or -n N), then each
            record as parleyd stores it, until Ctrl-C (exit 0) or parleyd stops (exit 5),
            as journalctl -f does. No record is missed or printed twice.

            --grep finds the records whose message holds these words in this order, the
            last one possibly the start of a word, in any case: --grep "request time"
            finds "Request timed out".

            Examples:
              parleyctl logs
              parleyctl logs Listr -f
              parleyctl logs Listr --level warning --since 10m
              parleyctl logs --label 'listr.net*' --grep timeout -n 20
              parleyctl logs --session 3 --json
            """
    )

    @Argument(help: "Only this app's records: its name, or the start of its peer id.", completion: LiveCompletions.peerNames)
    var app: String?

    @Option(help: ArgumentHelp("Only the records of the debugger session with this id (parleyctl sessions lists them).", valueName: "id"), completion: LiveCompletions.sessionIDs)
    var session: Int64?

    @Flag(name: [.short, .long], help: "After the last records, print records as parleyd stores them.")
    var follow = false

    @Option(help: ArgumentHelp("Only records at this level or above: trace, debug, info, notice, warning, error, critical.", valueName: "level"))
    var level: String?

    @Option(help: ArgumentHelp("Only records whose label matches this glob (* and ?).", valueName: "glob"))
    var label: String?

    @Option(help: ArgumentHelp("Only records whose message holds these words, in this order.", valueName: "text"))
    var grep: String?

    @Option(help: ArgumentHelp("Only records written since: 10m (ago), 17:05, 2026-11-25 17:05, RFC 3339.", valueName: "time"))
    var since: String?

    @Option(name: [.customShort("n"), .customLong("lines")], help: ArgumentHelp("Only the last N records (with --follow: 10 unless given).", valueName: "N"))
    var lines: Int?

    @OptionGroup var daemon: DaemonOptions

    @OptionGroup var format: OutputOptions

    func validate() throws {
        if let level, Self.severity(level) == nil {
            throw ValidationError("--level: \"\(level)\" is not a level; use trace, debug, info, notice, warning, error or critical")
        }
        if let label {
            do { _ = try ActionGlob(label) } catch { throw ValidationError("--label: \(error)") }
        }
        if let since, TimeArgument.date(since) == nil {
            throw ValidationError("--since: \"\(since)\" is not a time; write 10m (ago), 17:05, \"2026-11-25 17:05\" or 2026-11-25T17:05:00Z")
        }
        if let lines, lines < 0 { throw ValidationError("-n/--lines must not be negative") }
        if let grep, grep.isEmpty { throw ValidationError("--grep needs words to look for") }
    }

    /// swift-log's level names, and the short ones people type from other tools.
    static func severity(_ name: String) -> LogSeverity? {
        switch name.lowercased() {
        case "warn": .warning
        case "err": .error
        case "crit", "fatal": .critical
        case let other: LogSeverity(rawValue: other)
        }
    }

    /// The filters given, as parleyd reads them.
    var query: LogQuery {
        LogQuery(
            session: session, app: app, minimumSeverity: level.flatMap(Self.severity), label: label, text: grep,
            since: since.flatMap { TimeArgument.date($0) }.map(UnixNanos.init), limit: TelemetryControl.Logs.pageSize)
    }

    func run() async throws {
        // A followed log never ends: it goes straight to the terminal, like journalctl -f.
        Pager.start(unless: follow || format.display.noPager)
        let printer = LogPrinter(json: format.json, namesApps: app == nil && session == nil)
        if follow {
            try await listAndFollow(printer)
            return
        }
        try await daemon.session { client in
            let printed = lines == 0 ? 0 : try await list(client, upTo: nil, last: lines, printer: printer)
            if printed == 0, let app { try await requireApp(app, client) }
        }
    }

    /// Prints the matching records, the last `last` of them when given, up to the id `newest` when given. Returns
    /// how many it printed.
    private func list(_ client: DaemonClient, upTo newest: Int64?, last: Int?, printer: LogPrinter) async throws -> Int {
        var query = self.query
        query.last = last
        var printed = 0
        repeat {
            let page = try await client.control(TelemetryControl.Logs(query: query), expecting: TelemetryControl.LogPage.self, timeout: .seconds(30)).page
            for record in page.items {
                if let newest, record.id > newest { return printed }
                await printer.print(record, client)
                printed += 1
            }
            query.after = page.nextAfter
            query.last = nil
        } while query.after != nil
        return printed
    }

    /// Follows first, then lists: records stored meanwhile come as updates, and those up to the newest one when the
    /// follow began are printed from the listing only.
    private func listAndFollow(_ printer: LogPrinter) async throws {
        let (updates, continuation) = AsyncStream.makeStream(of: StoredLogRecord.self)
        let client = DaemonClient(socketPath: daemon.socketPath, name: "parleyctl", logLevel: "error")
        client.transceiver.receive(TelemetryControl.LogAppended.self) { appended, _ in continuation.yield(appended.record) }
        let events = client.transceiver.peerEvents
        let wanted = lines ?? 10
        try await client.run { client in
            defer { continuation.finish() }
            let following = try await client.control(TelemetryControl.FollowLogs(query: query), expecting: TelemetryControl.FollowingLogs.self)
            if let newest = following.lastID, wanted > 0 { _ = try await list(client, upTo: newest, last: wanted, printer: printer) }
            let floor = following.lastID ?? .min
            try await client.stream(watching: events) {
                for await record in updates where record.id > floor { await printer.print(record, client) }
            }
        }
    }

    /// Nothing printed for APP: fine if the app has sessions (its records do not match), an error if none has its
    /// name or peer id.
    private func requireApp(_ app: String, _ client: DaemonClient) async throws {
        var after: Int64?
        repeat {
            let page = try await client.control(DebuggerControl.Sessions(after: after), expecting: DebuggerControl.SessionList.self)
            if page.sessions.contains(where: { $0.appName == app || (!app.isEmpty && $0.peerID.hasPrefix(app.lowercased())) }) { return }
            after = page.nextAfter
        } while after != nil
        throw CtlFailure(.error, "no session of an app named \(app.shown) or with a peer id starting with it; parleyctl sessions lists the apps")
    }
}

/// Prints log records as lines for people (or JSON), naming each record's app when the command covers every app.
final class LogPrinter: Sendable {
    let json: Bool
    let namesApps: Bool
    /// Session id → app name, filled as records of new sessions come.
    private let apps = Mutex<[Int64: String]>([:])

    init(json: Bool, namesApps: Bool) {
        self.json = json
        self.namesApps = namesApps
    }

    func print(_ stored: StoredLogRecord, _ client: DaemonClient) async {
        if json {
            Output.json(stored)
            return
        }
        let app = namesApps ? await appName(of: stored.session, client) : nil
        let (text, style) = Self.line(stored.record, app: app)
        if let style { Output.line(text, style: style) } else { Output.line(text) }
    }

    private func appName(of session: Int64, _ client: DaemonClient) async -> String {
        if let known = apps.withLock({ $0[session] }) { return known }
        let found = try? await client.control(DebuggerControl.Sessions(after: session - 1, limit: 1), expecting: DebuggerControl.SessionList.self)
        let name = found?.sessions.first { $0.id == session }?.appName ?? "session \(session)"
        apps.withLock { $0[session] = name }
        return name
    }

    /// `2026-11-25 17:05:12.345 warning  Listr listr.store: disk almost full free=12 path="/var/a b"`, every text of
    /// the app's escaped; and the colour of its level.
    static func line(_ record: LogRecord, app: String?) -> (text: String, style: Output.Style?) {
        let level = record.severity.rawValue.padding(toLength: 8, withPad: " ", startingAt: 0)
        let who = [app, record.label].compactMap { $0 }.filter { !$0.isEmpty }.map(escaped).joined(separator: " ")
        var text = localTime(record.time) + " " + level + " " + (who.isEmpty ? "" : who + ": ") + escaped(record.message)
        for key in record.metadata.keys.sorted() {
            text += " " + escaped(key) + "=" + value(record.metadata[key]!)
        }
        return (text, style(of: record.severity))
    }

    static func style(of severity: LogSeverity) -> Output.Style? {
        switch severity {
        case .trace, .debug: .faint
        case .info: nil
        case .notice: .bold
        case .warning: .yellow
        case .error: .red
        case .critical: .error
        }
    }

    /// A string bare unless it is empty or holds spaces, `=` or quotes (then in quotes, `"` and `\` escaped);
    /// anything else as JSON-like text.
    static func value(_ value: TelemetryValue) -> String {
        guard case .string(let text) = value else { return escaped(value.description) }
        let plain = !text.isEmpty && !text.contains { $0 == " " || $0 == "=" || $0 == "\"" || $0 == "\\" }
        if plain { return escaped(text) }
        return "\"" + escaped(text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")) + "\""
    }

    static func escaped(_ text: String) -> String { text.escapedForPeople(maximumBytes: .max) }

    /// Local time to the millisecond, as the rest of a log line reads it.
    static func localTime(_ time: UnixNanos) -> String {
        var seconds = time_t(clamping: time.value / 1_000_000_000)
        var parts = tm()
        localtime_r(&seconds, &parts)
        return String(
            format: "%04d-%02d-%02d %02d:%02d:%02d.%03d", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1, Int(parts.tm_mday), Int(parts.tm_hour),
            Int(parts.tm_min), Int(parts.tm_sec), Int(time.value / 1_000_000 % 1000))
    }
}
