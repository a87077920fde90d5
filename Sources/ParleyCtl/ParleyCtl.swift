import ArgumentParser
import Foundation
import Parley
import ParleyCommandLine
import ParleyControl

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
            sessions, history, show, diff, replay, export, import and filters, and the
            apps' logs, traces and trace. With --direct, send,
            listen and peers run their own transceiver: they discover peers through
            avahi-daemon (or connect to --peer HOST:PORT), wait for a connected peer,
            act and exit. browse needs no daemon at all; otel-env asks this host's
            parleyd, or finds one on the LAN.

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
            Logs.self, Traces.self, Trace.self,
            Drawer.self, SetDrawerValue.self, InvokeDrawerAction.self, Secret.self, Web.self, OtelEnv.self,
            Devices.self, Pair.self, Unpair.self,
        ]
    )

    /// Runs the parsed command and maps every failure to the exit codes above (ArgumentParser's own usage
    /// errors would otherwise exit with 64, EX_USAGE).
    static func main() async {
        // A closed standard output must come back as an error from write (Output stops quietly on it), not as a
        // signal that kills the process in the middle of a send.
        signal(SIGPIPE, SIG_IGN)
        var command: any ParsableCommand
        do {
            command = try parseAsRoot()
        } catch {
            // A misspelt command: ArgumentParser would blame the argument after it ("Unknown option '--socket'").
            if let unknown = unknownCommand(in: Array(CommandLine.arguments.dropFirst())) {
                Output.failure(unknown)
                Foundation.exit(ExitStatus.usage.rawValue)
            }
            // All that parsing throws is ArgumentParser's: a usage error, or --help, --version, a completion script.
            Foundation.exit(reportArgumentParserError(error))
        }
        let status: Int32
        do {
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
            status = ExitStatus.success.rawValue
        } catch {
            // A command of ArgumentParser's own (help) throws only ArgumentParser's errors.
            status = isParleyCtlCommand(command) ? report(error) : reportArgumentParserError(error)
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
        // What a command's own code throws of ArgumentParser's: a ValidationError from its checks, an ExitCode.
        if error is ValidationError || error is ExitCode || error is CleanExit {
            return reportArgumentParserError(error)
        }
        let explained = ErrorText(error)
        Output.failure(explained.message)
        if verbose { explained.causes.forEach { Output.error("  cause: \($0)") } }
        return ExitStatus.error.rawValue
    }

    /// What to say when the first argument names no command: the closest commands, and where they are listed.
    /// Nil when it is a command (or an option: the parser's own message says what is wrong with it).
    static func unknownCommand(in arguments: [String]) -> String? {
        guard let first = arguments.first, !first.hasPrefix("-") else { return nil }
        let names = configuration.subcommands.map { $0._commandName } + ["help"]
        guard !names.contains(first) else { return nil }
        let near = NearestName.suggestions(for: first, among: names)
        let hint = near.isEmpty ? "" : " (did you mean \(near.joined(separator: " or "))?)"
        return "unknown command '\(first)'\(hint); parleyctl --help lists the commands"
    }

    /// Whether `command` is one of parleyctl's commands (the root, a subcommand or one of theirs), not one that
    /// ArgumentParser adds (help).
    static func isParleyCtlCommand(_ command: any ParsableCommand) -> Bool {
        func family(_ type: any ParsableCommand.Type) -> [any ParsableCommand.Type] {
            [type] + type.configuration.subcommands.flatMap(family)
        }
        let parsed = ObjectIdentifier(Swift.type(of: command))
        return family(ParleyCtl.self).contains { ObjectIdentifier($0) == parsed }
    }

    /// An error of ArgumentParser's: its message (and the usage lines it adds) in our format, or the help,
    /// version or completion script it stands for as normal output; returns the exit status.
    static func reportArgumentParserError(_ error: any Error) -> Int32 {
        let code = exitCode(for: error)
        let full = fullMessage(for: error)
        if code == .success {
            // --help, --version, --generate-completion-script: normal output.
            if !full.isEmpty { Output.line(full) }
            return ExitStatus.success.rawValue
        }
        // The full text is a prefix of ArgumentParser's, the message, and the help and usage lines below it: ours
        // replaces the prefix.
        let message = self.message(for: error)
        let text = full.range(of: message).map { String(full[$0.lowerBound...]) } ?? message
        if !text.isEmpty { Output.failure(text) }
        return code == .validationFailure ? ExitStatus.usage.rawValue : code.rawValue
    }
}
