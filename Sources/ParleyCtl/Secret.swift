import ArgumentParser
import Foundation
import Parley

/// `parleyctl secret generate`: makes the shared secret that nodes with `secretFile` prove to each other.
struct Secret: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Manage the shared secret that LAN peers must prove to each other.",
        subcommands: [Generate.self]
    )

    struct Generate: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make a new random shared secret (32 bytes, as 64 hex digits).",
            discussion: """
                With --output, writes it to FILE with mode 0600 (readable by its owner
                only), never replacing an existing file unless --force is given. Give the
                same file to every node that should talk to this one: parleyd's
                secretFile (--secret-file, PARLEY_SECRET_FILE), owned by the user parleyd
                runs as (under systemd: LoadCredential=, see docs/operations.md), or
                parleyctl --direct --secret-file. Without --output, or with --output -,
                prints the secret on standard output.

                Examples:
                  parleyctl secret generate --output /etc/parley/secret
                """
        )

        @Option(help: ArgumentHelp("Write the secret to this file (mode 0600); - for standard output.", valueName: "file"))
        var output: String?

        @Flag(help: "Replace the file if it exists.")
        var force = false

        @OptionGroup var display: DisplayOptions

        func validate() throws {
            if force && (output == nil || output == "-") { throw ValidationError("--force only applies with --output FILE") }
        }

        func run() throws {
            let secret = SharedSecret.generate()
            guard let output, output != "-" else {
                Output.line(secret.fileText.trimmingCharacters(in: .newlines))
                return
            }
            let path = URL(fileURLWithPath: output).standardizedFileURL.path
            do {
                try secret.write(toFile: path, replacing: force)
            } catch .alreadyExists {
                throw CtlFailure(.error, "\(path) already exists; it was not replaced (--force replaces it)")
            } catch {
                throw CtlFailure(.error, "\(error)")
            }
            Output.line("wrote a new shared secret to \(path) (mode 0600)")
        }
    }
}
