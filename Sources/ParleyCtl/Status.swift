import ArgumentParser
import Foundation
import Parley
import ParleyControl

struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show parleyd's name, port, advertisement, discovery state, peer count and uptime.",
        discussion: """
            Asks parleyd over its control socket (--socket); exits with status 5 if it
            cannot be reached.

            Examples:
              parleyctl status
              parleyctl status --socket /run/parley/parleyd.sock --json
            """
    )

    @OptionGroup var daemon: DaemonOptions

    @OptionGroup var format: OutputOptions

    func run() async throws {
        let status = try await daemon.ask(Control.Status(), expecting: Control.StatusReport.self)
        if format.json {
            Output.json(status)
            return
        }
        let rows: [(String, String)] = [
            ("name", status.name),
            ("peer id", status.peerID),
            ("device", status.fingerprint.flatMap(DeviceFingerprint.init).map(\.short) ?? "-"),
            ("port", "\(status.port)"),
            ("advertised as", status.advertisedName ?? "-"),
            ("discovery", status.discovery),
            ("peers", "\(status.peerCount)"),
            ("uptime", Self.uptime(status.uptimeSeconds)),
            ("version", status.version),
            ("socket", daemon.socketPath),
        ]
        for (key, value) in rows {
            Output.line((key + ":").padding(toLength: 15, withPad: " ", startingAt: 0) + value)
        }
    }

    /// `3d 4h 5m 6s`, leading zero units left out.
    static func uptime(_ seconds: Double) -> String {
        var rest = Int(seconds)
        var parts: [String] = []
        for (unit, size) in [("d", 86_400), ("h", 3_600), ("m", 60)] where rest >= size || !parts.isEmpty {
            parts.append("\(rest / size)\(unit)")
            rest %= size
        }
        parts.append("\(rest)s")
        return parts.joined(separator: " ")
    }
}
