import ArgumentParser
import Foundation
import ParleyDebugger
import ParleyJSON

struct Show: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show one recorded state: its action, time, session and the state itself.",
        discussion: """
            Without options the state is printed indented. --state prints only the
            state's JSON exactly as the app sent it (for a pipe or a file); --image
            writes the screenshot (PNG) to a file. --json prints one object with the
            entry's summary and the state as recorded.

            Examples:
              parleyctl show 42
              parleyctl show 42 --state > state.json
              parleyctl show 42 --image screen.png
            """
    )

    @Argument(help: "The entry's sequence number (parleyctl history lists them).")
    var sequence: Int64

    @Flag(help: "Print only the state, byte for byte as recorded.")
    var state = false

    @Option(help: ArgumentHelp("Write the screenshot (PNG) to this file; - writes it to standard output, alone.", valueName: "file"))
    var image: String?

    @Flag(help: "With --image FILE: overwrite FILE if it exists.")
    var force = false

    @OptionGroup var daemon: DaemonOptions

    @OptionGroup var format: OutputOptions

    func validate() throws {
        if state && format.json { throw ValidationError("give --state or --json, not both") }
        if image == "-" && (state || format.json) {
            throw ValidationError("--image - writes the PNG to standard output; it cannot share it with --state or --json")
        }
    }

    func run() async throws {
        let request = DebuggerControl.Show(sequence: sequence, includeScreenshot: image != nil)
        let entry = try await daemon.ask(request, expecting: DebuggerControl.Entry.self, timeout: .seconds(30)).entry
        if let image {
            guard entry.screenshot.readableBytes > 0 else { throw CtlFailure(.error, "entry \(sequence) has no screenshot") }
            let png = Data(entry.screenshot.readableBytesView)
            if image == "-" {
                Output.bytes(png)
                return
            }
            try OutputFile.write(png, to: image, force: force)
        }
        let stateBytes = Data(entry.state.readableBytesView)
        if state {
            Output.bytes(stateBytes)
            if stateBytes.last != UInt8(ascii: "\n") { Output.bytes(Data("\n".utf8)) }
        } else if format.json {
            Output.json(entry.summary, splicing: stateBytes, as: "state")
        } else {
            let summary = entry.summary
            Output.line("entry:      \(summary.sequence) (session \(summary.session))")
            Output.line("time:       \(Table.time(summary.time))")
            Output.line("action:     \(summary.action)")
            Output.line("state:      \(Table.bytes(summary.stateSize))")
            Output.line("screenshot: \(summary.screenshotSize == 0 ? "none" : Table.bytes(summary.screenshotSize))" + (image.map { " → \($0)" } ?? ""))
            let pretty = (try? JSONValue(parsing: entry.state).jsonText(pretty: true)) ?? String(buffer: entry.state)
            Output.line(pretty)
        }
    }
}
