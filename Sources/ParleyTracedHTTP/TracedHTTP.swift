import ArgumentParser

/// A traced HTTP server and client, each sending its spans and log lines to parleyd: the two bootstrap lines of
/// docs/observability.md in a program, and the apps of the integration tests (one trace across two processes).
@main
struct TracedHTTP: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "parley-traced-http",
        abstract: "A Hummingbird server and an AsyncHTTPClient request, traced and logged to parleyd.",
        subcommands: [Serve.self, Get.self, LogLevels.self]
    )
}

/// Where parleyd is and what this app is called there.
struct TelemetryOptions: ParsableArguments {
    @Option(name: .customLong("debugger"), help: "parleyd's address, HOST:PORT.")
    var debugger: DebuggerAddress

    @Option(name: .customLong("app-name"), help: "The app's name in parleyd.")
    var appName: String?
}

/// `HOST:PORT`, or `[IPv6]:PORT`.
struct DebuggerAddress: ExpressibleByArgument {
    var host: String
    var port: Int

    init?(argument: String) {
        guard let colon = argument.lastIndex(of: ":"), let port = Int(argument[argument.index(after: colon)...]), (1...65535).contains(port)
        else { return nil }
        var host = String(argument[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty else { return nil }
        self.host = host
        self.port = port
    }
}
