import ArgumentParser
import Foundation
import ParleyControl

struct Web: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the URL of parleyd's web debugger.",
        discussion: """
            The web debugger shows the recorded sessions, a live timeline, screenshots,
            states as trees and diffs (docs/web.md). The URL carries the sign-in token,
            which parleyd gives only over its control socket: opening it once lets the
            browser change things (replay, delete, import, drawer values). The page at
            the plain address is read-only. Keep the URL to yourself.

            Examples:
              parleyctl web
              xdg-open "$(parleyctl web)"
            """
    )

    @OptionGroup var daemon: DaemonOptions

    @OptionGroup var format: OutputOptions

    func run() async throws {
        let status = try await daemon.ask(Control.Status(), expecting: Control.StatusReport.self)
        guard let url = status.webURL else {
            throw CtlFailure(
                .error, "parleyd's web debugger is off (webListen is off); set webListen, for example to 127.0.0.1:7207, and restart parleyd")
        }
        if format.json {
            Output.json(["url": url])
        } else {
            Output.line(url)
        }
    }
}
