import ArgumentParser
import ParleyDebugger

struct Replay: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Send a recorded state back to an app, which applies it (time travel).",
        discussion: """
            By default the state goes to the app of the entry's own session, if it is
            still connected; --to chooses a connected app by name or id prefix, --all
            sends it to every connected debugger app. The app receives the state
            exactly as it was recorded (apps of the original Swift Talk debugger in
            their own 206 framing).

            Examples:
              parleyctl replay 42
              parleyctl replay 42 --to kitchen-tablet
              parleyctl replay 42 --all
            """
    )

    @Argument(help: "The entry whose state to send.")
    var sequence: Int64

    @Option(help: ArgumentHelp("A connected app: name, peer id or id prefix.", valueName: "peer"), completion: LiveCompletions.peerNames)
    var to: String?

    @Flag(help: "Send to every connected debugger app.")
    var all = false

    @OptionGroup var daemon: DaemonOptions

    @OptionGroup var format: OutputOptions

    func validate() throws {
        if all && to != nil { throw ValidationError("give --to or --all, not both") }
    }

    func run() async throws {
        let request = DebuggerControl.Replay(sequence: sequence, to: to, all: all)
        let result = try await daemon.ask(request, expecting: DebuggerControl.ReplayResult.self, timeout: .seconds(30))
        if format.json {
            Output.json(result)
            return
        }
        for recipient in result.sentTo {
            Output.line("state \(sequence) sent to \(recipient.name.shown) (\(recipient.id.prefix(8)))")
        }
    }
}
