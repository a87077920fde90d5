import ArgumentParser
import ParleyDebugger

struct Diff: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show what changed between two recorded states, property by property.",
        discussion: """
            With one entry, compares it with the entry before it in its session; with
            two, from A to B. Prints the paths of changed, added (+) and removed (-)
            values, array count changes and type changes, indented by path; --json
            prints the same as one object.

            Examples:
              parleyctl diff 42
              parleyctl diff 40 42 --json
            """
    )

    @Argument(help: "The entry (or, with B, the entry to compare from).")
    var first: Int64

    @Argument(help: "The entry to compare to.")
    var second: Int64?

    @OptionGroup var daemon: DaemonOptions

    @OptionGroup var format: OutputOptions

    func run() async throws {
        Pager.start(unless: format.display.noPager)
        let request = second.map { DebuggerControl.Diff(from: first, to: $0) } ?? DebuggerControl.Diff(from: nil, to: first)
        let result = try await daemon.ask(request, expecting: DebuggerControl.DiffResult.self, timeout: .seconds(60))
        if format.json {
            Output.json(DiffReport(result))
            return
        }
        Output.line("\(result.from.sequence) (\(result.from.action)) → \(result.to.sequence) (\(result.to.action))")
        Output.line(result.diff.text())
    }
}
