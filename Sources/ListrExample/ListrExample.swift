import ArgumentParser
import AsyncHTTPClient
import Foundation
import ListrCommands
import Logging
import Parley
import ParleyAvahi
import ParleyControl
import ParleyLogging
import ParleyRemoteDebugger
import ParleyRemoteDrawer
import ParleyTracing
import Tracing
import UnixSignals

// A to-do list in the spirit of the Listr app of the chibictl/listrctl article: it waits to be contacted and
// answers AddItemCommand, ListItemsCommand, DumpDatabaseCommand and ReplaceDatabaseCommand with a CLIResponse.
//
//   listr-example                                  listen on 7216, advertise on _debug._tcp
//   parleyctl send AddItemCommand '{"title":"milk"}' --direct --reply
//   parleyctl send ListItemsCommand --direct --reply

@main
struct ListrExample: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "listr-example",
        abstract: "A to-do list that parleyctl can talk to.",
        discussion: """
            Answers AddItemCommand {"title": ...}, ListItemsCommand {},
            DumpDatabaseCommand {} (replies with the list as JSON bytes) and
            ReplaceDatabaseCommand {"data": "<base64>"}, each with a CLIResponse:
            {"message": "text"} or {"data": "<base64>"}. Prints
            "listr ready on port N as NAME, device FINGERPRINT" once it listens; stops on SIGINT or SIGTERM.
            """
    )

    @Option(help: "Name sent in the handshake and in the advertisement's TXT record.")
    var name = "listr"

    /// Not parleyd's 7206: the README's walk-through runs both on one machine. Discovery advertises the port, so
    /// peers that browse never need to know it.
    static let defaultPort = 7216

    @Option(help: "TCP port to listen on; 0 picks a free one (printed in the ready line).")
    var port = Self.defaultPort

    @Option(help: "Address to listen on (\"::\" accepts IPv6 and IPv4).")
    var host = "::"

    @Flag(help: "Do not advertise or browse with avahi-daemon; peers must connect to the port directly.")
    var noDiscovery = false

    @Option(help: "DNS-SD service type to advertise.")
    var serviceType = ServiceType.debug.rawValue

    @Option(help: "JSON file holding the list: read at start, rewritten after every change. Without it the list lives in memory.")
    var data: String?

    @Option(help: "Log level: trace, debug, info, notice, warning, error or critical.")
    var logLevel = "warning"

    @Option(help: """
        A shared secret file, as parleyd's secretFile (parleyctl secret generate): only peers that prove the secret \
        get in, and their connections are encrypted. Without it the app runs open: anyone on the LAN can send it \
        commands, and any peer that says it hosts drawers can set its values and invoke its actions.
        """)
    var secretFile: String?

    @Option(help: ArgumentHelp(
        "Where listr keeps its device identity (its key and certificate), made on first start (default: $XDG_STATE_HOME/parley/<--name>.device).",
        valueName: "directory"))
    var deviceDirectory: String?

    @Option(help: ArgumentHelp("""
        A device (its fingerprint, at least the 16 characters of the short form) let in over TLS with its \
        certificate, as parleyctl --direct --paired connects; repeatable. Peers in the clear still meet \
        --secret-file or the open mode. A device not named here is told to ask listr's person, whose log shows \
        the pairing code and this option to accept it.
        """, valueName: "fingerprint"))
    var trustDevice: [String] = []

    func validate() throws {
        for text in trustDevice where text.filter({ $0 != "-" }).count < 16 {
            throw ValidationError("--trust-device \"\(text)\" is too short: give at least the 16 characters of the short fingerprint (XXXX-XXXX-XXXX-XXXX)")
        }
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0…65535, not \(port)") }
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("unknown --log-level \"\(logLevel)\"") }
        do { _ = try ServiceType(serviceType) } catch { throw ValidationError("\(error)") }
    }

    func run() async throws {
        let level = Logger.Level(rawValue: logLevel) ?? .warning
        @Sendable func terminal(_ label: String) -> any LogHandler {
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }

        let store = try ItemStore(file: data)
        var configuration = TransceiverConfiguration(name: name, listenHost: host, port: port)
        // The transceiver's own diagnostics go to the terminal only: its lines about the connection to parleyd are
        // not the app's story, and it is made before the logging system below, which needs it.
        configuration.logger = Logger(label: "parley", factory: terminal)
        if let secretFile {
            do {
                configuration.sharedSecret = try SharedSecret(contentsOfFile: secretFile)
            } catch {
                throw ListrError("--secret-file: \(error.descriptionNamingCommand)")
            }
        } else {
            FileHandle.standardError.write(Data("""
                listr runs open: anyone on the LAN can send it commands, and any peer that says it hosts drawers can \
                set its drawer's values and invoke its actions; give --secret-file with parleyd's secret file to let \
                in only the peers that know it

                """.utf8))
        }
        // A device identity of its own: peers that connect with a certificate (parleyctl --direct --paired) are let in
        // when listed in --trust-device; the others are told to ask, and the code goes to this terminal.
        let identity: DeviceIdentity
        do {
            identity = try DeviceIdentity.loadOrCreate(in: deviceDirectory ?? TransceiverConfiguration.defaultDeviceDirectory(name: name), name: name)
        } catch {
            throw ListrError("--device-directory: \(error)")
        }
        let trusted = trustDevice
        var devices = DeviceAuthentication(identity: identity, allowsCleartext: true) { fingerprint in
            trusted.contains { fingerprint.matches(prefix: $0) }
        }
        devices.dialsDevices = false
        devices.untrusted = { request in
            say("""
                listr: \(request.name ?? "a device") (\(request.fingerprint.short), from \(request.host)) asks to pair; \
                the code here is \(request.code); to accept, restart listr with --trust-device \(request.fingerprint.short)
                """)
            return "listr's person accepts by restarting it with --trust-device for this device; listr's code is \(request.code)"
        }
        configuration.devices = devices
        // Discovery makes the app findable; it never dials anyone itself: it waits to be contacted.
        configuration.discovery = noDiscovery ? nil : DiscoveryConfiguration(backend: .avahi, serviceType: serviceType, autoConnect: .none)
        let parley = Transceiver(configuration: configuration)

        // The app's logs and traced requests on the debugger's timeline (docs/observability.md), over the
        // connection parleyd already has to the app: the same session as its drawer. The terminal keeps its lines.
        let telemetry = TelemetryExporter(configuration: .init(appName: name, destination: .transceiver(parley)))
        LoggingSystem.bootstrap { label in
            MultiplexLogHandler([terminal(label), ParleyLogHandler(label: label, exporter: telemetry, level: .info)])
        }
        InstrumentationSystem.bootstrap(ParleyTracer(exporter: telemetry))
        let logger = Logger(label: "listr")

        // The debug drawer (docs/drawer.md): `parleyctl drawer listr`, `parleyctl set listr network.slow true`.
        let drawer = DebugDrawer(transceiver: parley)
        let slow = drawer.toggle("network.slow", "Simulate a slow network (answers take 2 s)", default: false, section: "Network", remember: true)
        let style = drawer.choice("list.style", "How the list is shown", default: ListStyle.checkboxes, section: "Look", remember: true)
        drawer.action("list.reset", "Empty the list", section: "Data", destructive: true) {
            let removed = try await store.replace(with: ListrDatabase())
            say("the list was emptied from the drawer")
            return "removed \(removed) \(removed == 1 ? "item" : "items")"
        }
        let requestURL = drawer.text("debug.url", "Address the traced request fetches", default: "http://127.0.0.1:7207/api/sessions", section: "Debug")
        drawer.action("debug.request", "Make a traced HTTP request", section: "Debug") {
            // A span of the app's own around AsyncHTTPClient's, which is the HTTP client span with method, URL and
            // status: the trace view shows one inside the other.
            let answer = try await withSpan("listr.fetch", ofKind: .internal) { span in
                span.attributes["listr.items"] = await store.items.count
                let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup)
                defer { _ = client.shutdown() }
                let response = try await client.execute(HTTPClientRequest(url: requestURL.value), timeout: .seconds(10))
                logger.info("fetched \(requestURL.value)", metadata: ["status": "\(response.status.code)"])
                return "\(response.status.code) from \(requestURL.value)"
            }
            // After the span has ended, so that whoever sees this line in parleyd finds the whole trace there too.
            logger.info("traced request done")
            return answer
        }
        drawer.info("build", "Build", value: "listr-example, Parley protocol \(ProtocolVersion.current)")
        /// What the slow-network switch simulates: a real wait before each answer, by design.
        @Sendable func network() async throws {
            if slow.value { try await Task.sleep(for: .seconds(2)) }
        }

        parley.respond(to: AddItemCommand.self) { command, peer in
            try await network()
            let title = command.title.trimmingCharacters(in: .whitespacesAndNewlines)
            guard !title.isEmpty else {
                logger.warning("refused an empty title", metadata: ["by": "\(peer.name)"])
                throw ListrError("nothing added: the title is empty")
            }
            let count = try await store.add(title)
            logger.info("item added", metadata: ["title": "\(title)", "count": "\(count)", "by": "\(peer.name)"])
            say("\(peer.name) added \"\(title)\"")
            return CLIResponse.message("added \"\(title)\" (\(count) \(count == 1 ? "item" : "items") on the list)")
        }
        parley.respond(to: ListItemsCommand.self) { _, _ in
            try await network()
            let items = await store.items
            if items.isEmpty { return CLIResponse.message("the list is empty") }
            return CLIResponse.message(items.map { style.value.line(for: $0) }.joined(separator: "\n"))
        }
        parley.respond(to: DumpDatabaseCommand.self) { _, peer in
            let bytes = try await store.database.encoded()
            say("\(peer.name) dumped the list (\(bytes.count) bytes)")
            return CLIResponse.data(bytes)
        }
        parley.respond(to: ReplaceDatabaseCommand.self) { command, peer in
            let database: ListrDatabase
            do {
                database = try ListrDatabase.decode(command.data)
            } catch {
                throw ListrError("the data is not a Listr list ({\"items\": [{\"title\": …, \"done\": …}]}): \(error)")
            }
            try await store.replace(with: database)
            logger.notice("list replaced", metadata: ["items": "\(database.items.count)", "by": "\(peer.name)"])
            say("\(peer.name) replaced the list (\(database.items.count) items)")
            return CLIResponse.message("replaced the list: \(database.items.count) \(database.items.count == 1 ? "item" : "items")")
        }

        // Trapped before "ready" is said: a signal sent by whoever waited for it stops listr cleanly.
        var signals = await UnixSignalsSequence(trapping: .sigint, .sigterm).makeAsyncIterator()
        try await parley.start()
        try telemetry.start()
        logger.info("listr started", metadata: ["port": "\(parley.listeningPort ?? port)"])
        say("listr ready on port \(parley.listeningPort ?? port) as \(name), device \(identity.fingerprint.short)")
        let signal = await signals.next().map { "\($0)" } ?? "end of signals"
        say("listr stopping (signal \(signal))")
        logger.info("listr stopping", metadata: ["signal": "\(signal)"])
        await telemetry.stop()
        await parley.stop()
    }
}

/// The list, kept in memory and (with `--data`) in a JSON file rewritten atomically after every change.
actor ItemStore {
    private(set) var database: ListrDatabase
    private let file: URL?

    init(file path: String?) throws {
        file = path.map { URL(fileURLWithPath: $0) }
        if let file, FileManager.default.fileExists(atPath: file.path) {
            do {
                database = try ListrDatabase.decode(Data(contentsOf: file))
            } catch {
                throw ListrError("cannot read the list from \(file.path): \(error)")
            }
        } else {
            database = ListrDatabase()
        }
    }

    var items: [ListrItem] { database.items }

    func add(_ title: String) throws -> Int {
        var changed = database
        changed.items.append(ListrItem(title: title))
        try save(changed)
        return database.items.count
    }

    /// Returns how many items the list had before.
    @discardableResult
    func replace(with newDatabase: ListrDatabase) throws -> Int {
        let before = database.items.count
        try save(newDatabase)
        return before
    }

    /// Writes first, then adopts: a change that cannot be stored is refused rather than half made.
    private func save(_ newDatabase: ListrDatabase) throws {
        if let file {
            do {
                try newDatabase.encoded().write(to: file, options: .atomic)
            } catch {
                throw ListrError("cannot write the list to \(file.path): \(error.localizedDescription)")
            }
        }
        database = newDatabase
    }
}

/// The drawer's choice of how `ListItemsCommand` shows the list.
enum ListStyle: String, CaseIterable, Codable, Sendable {
    case checkboxes
    case bullets

    func line(for item: ListrItem) -> String {
        switch self {
        case .checkboxes: "\(item.done ? "[✓]" : "[ ]") \(item.title)"
        case .bullets: "• \(item.title)\(item.done ? " (done)" : "")"
        }
    }
}

struct ListrError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// One line on standard output, written at once (stdout is often a pipe, where `print` would buffer it).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

