import ArgumentParser
import Foundation
import Logging
import Parley
import ParleyControl

/// Options of the commands that reach peers: `send`, `listen`, `peers`.
struct DirectOptions: ParsableArguments {
    @Flag(help: "Run a transceiver in this process instead of going through parleyd.")
    var direct = false

    @Option(
        name: .customLong("peer"),
        help: ArgumentHelp(
            "With --direct: connect to this peer (HOST:PORT, [IPv6]:PORT); repeatable. Turns discovery off.",
            valueName: "host:port"
        )
    )
    var peers: [String] = []

    @Flag(help: "With --direct: do not use avahi-daemon; only --peer endpoints (and peers connecting to us) count.")
    var noDiscovery = false

    @Option(help: "DNS-SD service type to discover peers on.")
    var serviceType = ServiceType.debug.rawValue

    @Option(help: "Name this tool gives in the handshake.")
    var name = "parleyctl"

    @Option(help: ArgumentHelp("With --direct: the shared secret file of the nodes to talk to (as parleyd's secretFile).", valueName: "file"))
    var secretFile: String?

    @Flag(help: """
        With --direct: connect as a device (TLS 1.3 with parleyctl's own certificate) and only to the debuggers \
        parleyctl paired with; while there is none, to the one --debugger or PARLEY_DEBUGGER names, else to every \
        debugger found, each of which asks its person to accept (parleyctl prints the code to compare).
        """)
    var paired = false

    @Option(help: ArgumentHelp("With --direct: the debugger (its DNS-SD instance name) to pair with while none is paired; implies --paired.", valueName: "name"))
    var debugger: String?

    @Option(help: ArgumentHelp(
        "With --paired: where parleyctl keeps its device identity and the debuggers it paired with (default: $XDG_STATE_HOME/parley/<--name>.device).",
        valueName: "directory"))
    var deviceDirectory: String?

    @Option(help: "Log level on standard error: trace, debug, info, notice, warning, error or critical.")
    var logLevel = "error"

    func validate() throws {
        for text in peers where Endpoint(text) == nil {
            throw ValidationError("--peer \"\(text)\" is not HOST:PORT (an IPv6 address goes in brackets: [::1]:7206)")
        }
        do { _ = try ServiceType(serviceType) } catch { throw ValidationError("--service-type: \(error)") }
        if (paired || debugger != nil || deviceDirectory != nil) && !direct {
            throw ValidationError("--paired, --debugger and --device-directory are for --direct; without it parleyctl goes through the local parleyd")
        }
        if deviceDirectory != nil && !connectsAsDevice {
            throw ValidationError("--device-directory is where --paired keeps parleyctl's identity; give --paired too")
        }
        guard Logger.Level(rawValue: logLevel) != nil else {
            throw ValidationError("unknown --log-level \"\(logLevel)\"; use trace, debug, info, notice, warning, error or critical")
        }
    }

    var endpoints: [Endpoint] { peers.compactMap(Endpoint.init) }

    /// Whether this tool connects as a device (`--paired`, or `--debugger`, which implies it).
    var connectsAsDevice: Bool { paired || debugger != nil }

    /// Discovery runs unless static peers were given or it was turned off.
    var usesDiscovery: Bool { endpoints.isEmpty && !noDiscovery }
}

/// `--socket`: where parleyd's control socket is (the commands that go through parleyd).
struct DaemonOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "parleyd's control socket (default: parleyd's own default: $RUNTIME_DIRECTORY/parleyd.sock, /run/parley/parleyd.sock for root, else $XDG_RUNTIME_DIR/parley/parleyd.sock).",
            valueName: "path"
        )
    )
    var socket: String?

    var socketPath: String { socket ?? ControlSocket.defaultPath(environment: ProcessInfo.processInfo.environment) }

    /// One control request to parleyd, for the commands that need nothing else (status, reload, history, …).
    func ask<Request: Encodable & Sendable, Reply: Decodable & Sendable>(
        _ request: Request, expecting reply: Reply.Type, timeout: Duration = DaemonClient.controlTimeout
    ) async throws -> Reply {
        try await session { client in try await client.control(request, expecting: reply, timeout: timeout) }
    }

    /// Several requests over one connection to parleyd (paging, export, import).
    func session<T: Sendable>(_ body: (DaemonClient) async throws -> T) async throws -> T {
        try await DaemonClient(socketPath: socketPath, name: "parleyctl", logLevel: "error").run(body)
    }
}

/// `--json` on every command that prints something.
struct OutputOptions: ParsableArguments {
    @Flag(help: "Print JSON, one object per line.")
    var json = false

    @OptionGroup var display: DisplayOptions
}

/// `--verbose` (on failure, the causes under the one-line message), `--no-color` and `--no-pager`. The first two
/// are read from the command line by ``Output`` and `ParleyCtl.report`, which run outside any one command;
/// declared here so that every command accepts them and documents them. Commands with long output page it.
struct DisplayOptions: ParsableArguments {
    @Flag(help: "On failure, also print the causes: protocol error codes, the peer, the underlying error.")
    var verbose = false

    @Flag(help: "No colour, even on a terminal (NO_COLOR in the environment does the same).")
    var noColor = false

    @Flag(help: "Write long output straight to the terminal, not through $PAGER (default less).")
    var noPager = false
}

/// Seconds given on the command line, as a `Duration`.
func seconds(_ value: Double) -> Duration {
    .milliseconds(Int64((value * 1000).rounded()))
}

func validatePositive(_ value: Double, _ option: String) throws {
    guard value > 0, value.isFinite else { throw ValidationError("\(option) must be a positive number of seconds, not \(value)") }
}
