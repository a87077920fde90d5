import ArgumentParser
import ParleyDebugger

struct Filters: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the action filters saved by name in parleyd's configuration.",
        discussion: """
            Saved filters (the actionFilters key of parleyd.json) are what
            `parleyctl history --filter NAME` uses; docs/debugger.md shows how to
            write them.

            Examples:
              parleyctl filters
            """
    )

    @OptionGroup var daemon: DaemonOptions

    @OptionGroup var format: OutputOptions

    func run() async throws {
        let filters = try await daemon.ask(DebuggerControl.Filters(), expecting: DebuggerControl.FilterList.self).filters
        if format.json {
            Output.json(filters)
            return
        }
        if filters.isEmpty { Output.line("no saved filters (add them under actionFilters in parleyd's configuration)") }
        for name in filters.keys.sorted() { Output.line("\(name): \(filters[name]!)") }
    }
}
