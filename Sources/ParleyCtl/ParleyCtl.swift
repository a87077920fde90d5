import ArgumentParser
import Foundation
import Parley
import ParleyCommandLine

/// `parleyctl`: talk to Parley peers from a shell. Subcommands live one per file; options shared between them
/// are in Options.swift, the in-process transceiver used by `--direct` in DirectNode.swift.
@main
struct ParleyCtl: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "parleyctl",
        abstract: "Find Parley peers on the LAN and talk to them in typed messages.",
        discussion: """
            Without --direct, send, listen, peers, status and reload go through parleyd,
            the Parley daemon, over its control socket (--socket), as do the debugger's
            sessions, history, show, diff, replay, export, import and filters. With --direct, send,
            listen and peers run their own transceiver: they discover peers through
            avahi-daemon (or connect to --peer HOST:PORT), wait for a connected peer,
            act and exit. browse needs no daemon at all.

            EXIT STATUS
              0  success
              1  error (cannot connect, the peer answered with an error, avahi-daemon
                 unreachable, ...)
              2  usage: invalid arguments, or a payload that is not JSON
              3  no matching peer connected within --wait-peer
              4  no reply within --reply-timeout
              5  parleyd not reachable (its control socket; or use --direct)
            """,
        version: ParleyRelease.version,
        subcommands: [
            Browse.self, Send.self, Listen.self, Peers.self, Status.self, Reload.self,
            Sessions.self, History.self, Show.self, Diff.self, Replay.self, Export.self, Import.self, Filters.self,
            Drawer.self, SetDrawerValue.self, InvokeDrawerAction.self, Secret.self, Web.self,
        ]
    )

    /// Runs the parsed command and maps every failure to the exit codes above (ArgumentParser's own usage
    /// errors would otherwise exit with 64, EX_USAGE).
    static func main() async {
        // A closed standard output must come back as an error from write (Output stops quietly on it), not as a
        // signal that kills the process in the middle of a send.
        signal(SIGPIPE, SIG_IGN)
        let status: Int32
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
            status = ExitStatus.success.rawValue
        } catch {
            status = report(error)
        }
        Foundation.exit(status)
    }

    /// Prints what went wrong (or the help text, completion script, …) and returns the exit status. Every
    /// failure is one line, `parleyctl: error: …`, saying what happened and what to do; `--verbose` adds the
    /// causes on the lines below.
    static func report(_ error: any Error) -> Int32 {
        let verbose = CommandLine.arguments.dropFirst().contains("--verbose")
        if let failure = error as? CtlFailure {
            Output.failure(failure.message)
            return failure.status.rawValue
        }
        if let failure = error as? TransceiverError {
            let explained = ErrorText(failure)
            Output.failure(explained.message)
            if verbose { explained.causes.forEach { Output.error("  cause: \($0)") } }
            return ExitStatus(for: failure).rawValue
        }
        let code = exitCode(for: error)
        let message = fullMessage(for: error)
        if code == .success {
            // --help, --version, --generate-completion-script: normal output.
            if !message.isEmpty { Output.line(message) }
            return ExitStatus.success.rawValue
        }
        if code == .validationFailure || message.hasPrefix("Error: ") {
            // ArgumentParser's "Error: …" (and its usage lines below) in our format.
            if !message.isEmpty { Output.failure(message.hasPrefix("Error: ") ? String(message.dropFirst(7)) : message) }
            return code == .validationFailure ? ExitStatus.usage.rawValue : code.rawValue
        }
        let explained = ErrorText(error)
        Output.failure(explained.message)
        if verbose { explained.causes.forEach { Output.error("  cause: \($0)") } }
        return code == .success ? ExitStatus.error.rawValue : code.rawValue
    }
}
