import ArgumentParser
import Foundation
import Parley
import ParleyControl

/// `parleyctl devices`: parleyd's own fingerprint and the devices paired with it.
struct Devices: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the devices paired with parleyd, with their fingerprints and when each was last seen.",
        discussion: """
            Devices (apps, other machines) that connect over TLS with a device certificate
            get in only once paired; `parleyctl pair` shows the requests waiting.

            Examples:
              parleyctl devices
              parleyctl devices --json
            """
    )

    @OptionGroup var daemon: DaemonOptions
    @OptionGroup var format: OutputOptions

    func run() async throws {
        let list = try await daemon.ask(DeviceControl.Devices(), expecting: DeviceControl.DeviceList.self)
        if format.json {
            Output.json(list)
            return
        }
        Self.print(list, pending: false)
    }

    /// What a person reads: parleyd's fingerprint, then the paired devices or the pending requests.
    static func print(_ list: DeviceControl.DeviceList, pending: Bool) {
        if let done = list.done { Output.line(done) }
        Output.line("this debugger: \(short(list.fingerprint))")
        if pending {
            guard !list.pending.isEmpty else {
                Output.line("no device asks to pair")
                return
            }
            Table.print(
                ["DEVICE", "NAME", "CODE", "ADDRESS", "ASKED", "TIMES"],
                list.pending.map { [short($0.fingerprint), $0.name, $0.code, $0.address, ago($0.requestedAt), "\($0.attempts)"] },
                caps: [19, 32, 7, 40])
            Output.line("accept one only if the device shows the same code: parleyctl pair accept DEVICE")
        } else {
            guard !list.paired.isEmpty else {
                Output.line("no paired device" + (list.pending.isEmpty ? "" : " (\(list.pending.count) asking: parleyctl pair)"))
                return
            }
            Table.print(
                ["DEVICE", "NAME", "PAIRED", "LAST SEEN"],
                list.paired.map { [short($0.fingerprint), $0.name, ago($0.pairedAt), $0.connected ? "connected" : $0.lastSeen.map(ago) ?? "never"] },
                caps: [19, 32])
        }
    }

    private static func short(_ full: String) -> String { DeviceFingerprint(full)?.short ?? full }

    private static func ago(_ date: Date) -> String {
        let seconds = max(0, Int(Date().timeIntervalSince(date)))
        return seconds < 60 ? "\(seconds)s ago" : seconds < 3_600 ? "\(seconds / 60)m ago" : seconds < 86_400 ? "\(seconds / 3_600)h ago" : "\(seconds / 86_400)d ago"
    }
}

/// `parleyctl pair`: the pairing requests waiting, and accepting or refusing one.
struct Pair: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show the devices asking to pair with parleyd, with the code each shows.",
        discussion: """
            A device that connects with a certificate parleyd does not know asks to pair;
            it gets nothing until a person accepts it here. Accept only a device that
            shows the same six digits: a machine in the middle shows different ones.

            Examples:
              parleyctl pair
              parleyctl pair accept 7JVS-GH2G
              parleyctl pair refuse 7JVS
            """,
        subcommands: [Accept.self, Refuse.self]
    )

    @OptionGroup var daemon: DaemonOptions
    @OptionGroup var format: OutputOptions

    func run() async throws {
        let list = try await daemon.ask(DeviceControl.Devices(), expecting: DeviceControl.DeviceList.self)
        if format.json {
            Output.json(list)
            return
        }
        Devices.print(list, pending: true)
    }

    struct Accept: DeviceDecision {
        static let configuration = CommandConfiguration(
            abstract: "Pair the device asking with this fingerprint (or its beginning).",
            discussion: "Examples:\n  parleyctl pair accept 7JVS-GH2G")
        @Argument(help: DeviceArgument.help) var device: String
        @OptionGroup var daemon: DaemonOptions
        @OptionGroup var format: OutputOptions
        var request: DeviceControl.PairAccept { .init(device: device) }
    }

    struct Refuse: DeviceDecision {
        static let configuration = CommandConfiguration(
            abstract: "Refuse the device asking with this fingerprint (it may ask again).",
            discussion: "Examples:\n  parleyctl pair refuse 7JVS")
        @Argument(help: DeviceArgument.help) var device: String
        @OptionGroup var daemon: DaemonOptions
        @OptionGroup var format: OutputOptions
        var request: DeviceControl.PairRefuse { .init(device: device) }
    }
}

/// `parleyctl unpair`: takes a paired device back.
struct Unpair: DeviceDecision {
    static let configuration = CommandConfiguration(
        abstract: "Take a paired device back: its open connections close at once, and it is refused from then on.",
        discussion: """
            Examples:
              parleyctl unpair 7JVS-GH2G
            """
    )

    @Argument(help: DeviceArgument.help) var device: String
    @OptionGroup var daemon: DaemonOptions
    @OptionGroup var format: OutputOptions
    var request: DeviceControl.Unpair { .init(device: device) }
}

enum DeviceArgument {
    static let help: ArgumentHelp = "The device's fingerprint, or enough of its beginning to name one device."
}

/// `pair accept`, `pair refuse` and `unpair`: one request about one device, answered with the devices as they are
/// now and what was done.
protocol DeviceDecision: AsyncParsableCommand {
    associatedtype Request: Encodable & Sendable
    var request: Request { get }
    var daemon: DaemonOptions { get }
    var format: OutputOptions { get }
}

extension DeviceDecision {
    func run() async throws {
        let list = try await daemon.ask(request, expecting: DeviceControl.DeviceList.self)
        format.json ? Output.json(list) : Output.line(list.done ?? "done")
    }
}
