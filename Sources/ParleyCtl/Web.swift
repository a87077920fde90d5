import ArgumentParser
import Foundation
import ParleyControl

struct Web: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the URL of parleyd's web debugger.",
        discussion: """
            The web debugger shows the recorded sessions, a live timeline, screenshots,
            states as trees and diffs (docs/web.md). With webTokenFile configured the URL
            carries the access token: opening it once signs the browser in.

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
