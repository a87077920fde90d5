import ArgumentParser
import ParleyControl

struct Reload: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Make parleyd re-read its configuration, as SIGHUP does.",
        discussion: """
            Prints the keys that took effect and those that need a restart of parleyd.
            A configuration that no longer loads is an error (status 1) naming the
            problem; parleyd keeps running as it was. Exits 5 if parleyd cannot be
            reached.

            Examples:
              parleyctl reload
            """
    )

    @OptionGroup var daemon: DaemonOptions

    @OptionGroup var format: OutputOptions

    func run() async throws {
        let result = try await daemon.ask(Control.Reload(), expecting: Control.ReloadResult.self)
        if format.json {
            Output.json(result)
            return
        }
        if result.applied.isEmpty, result.needRestart.isEmpty {
            Output.line("configuration reloaded; nothing changed")
            return
        }
        if !result.applied.isEmpty { Output.line("applied: \(result.applied.joined(separator: ", "))") }
        if !result.needRestart.isEmpty { Output.line("needs a restart of parleyd: \(result.needRestart.joined(separator: ", "))") }
    }
}
