import ArgumentParser
import Foundation
import Parley
import ParleyControl
import UnixSignals

struct Listen: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print incoming messages (of the given types, or all) until interrupted.",
        discussion: """
            Through parleyd (--socket): subscribes to the LAN messages of the --type
            names (all, without --type) that parleyd has no handler for, and prints
            them with their sender. Exits 5 if parleyd goes away.

            With --direct, runs a transceiver that listens on --port (any free port by
            default), advertises itself on the service type, connects to the peers it
            discovers (or to --peer HOST:PORT), and prints every message it receives
            (only those of the --type names, when given): type, sender and payload;
            with --json one object per line.
            The port and name go to standard error once listening. Stops on SIGINT or
            SIGTERM.

            Named --type values are announced to peers in the handshake, so that
            `parleyctl send` can resolve short names against them.

            Examples:
              parleyctl listen --type listr.AddItemCommand --json
              parleyctl listen --direct
              parleyctl listen --direct --type AddItemCommand --type CLIResponse
              parleyctl listen --direct --type test.Note --no-discovery --port 7300
            """
    )

    @Option(name: .customLong("type"), help: ArgumentHelp("A message type name to print; repeatable. Without it, every type is printed.", valueName: "type"))
    var types: [String] = []

    @Option(help: "With --direct: TCP port to listen on for peers (0: any free port).")
    var port = 0

    @OptionGroup var connection: DirectOptions

    @OptionGroup var daemon: DaemonOptions

    @OptionGroup var format: OutputOptions

    func validate() throws {
        for type in types where !(1...1024).contains(type.utf8.count) {
            throw ValidationError("--type must be 1…1024 bytes of UTF-8")
        }
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0…65535, not \(port)") }
    }

    func run() async throws {
        guard connection.direct else {
            try await listenThroughDaemon()
            return
        }
        let node = try DirectNode(connection, listenPort: port)
        let json = format.json
        let show: @Sendable (InboundMessage, Peer) async throws -> Void = { message, peer in
            let payload = Data(message.payload.readableBytesView)
            if json {
                Output.json(
                    MessageRecord(type: message.typeName, from: PeerRecord(peer), receivedAt: Date()),
                    splicing: payload, as: "payload"
                )
            } else {
                Output.line("\(message.typeName) from \(peer.name.shown) (\(peer.id.rawValue.prefix(8))): \(String(decoding: payload, as: UTF8.self))")
            }
        }
        if types.isEmpty {
            node.transceiver.receiveUnhandled(show)
        } else {
            for type in Set(types) { node.transceiver.receiveRaw(typeName: type, handler: show) }
        }
        let events = node.transceiver.peerEvents
        try await node.run {
            // Trapped before anything is printed: whoever reads "listening" and then signals gets a clean stop.
            let signals = await UnixSignalsSequence(trapping: .sigint, .sigterm)
            let port = node.transceiver.listeningPort ?? port
            Output.error("parleyctl: listening for \(types.isEmpty ? "all message types" : types.joined(separator: ", ")) on port \(port) as \(connection.name); Ctrl-C to stop")
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await event in events {
                        switch event {
                        case .connected(let peer):
                            Output.error("parleyctl: connected to \(peer.name.shown) (\(peer.id.rawValue.prefix(8))) at \(peer.address)")
                        case .disconnected(let peer, let reason):
                            Output.error("parleyctl: \(peer.name.shown) (\(peer.id.rawValue.prefix(8))) disconnected: \(reason)")
                        }
                    }
                }
                var signal = signals.makeAsyncIterator()
                _ = await signal.next()
                // Stopping finishes the event stream, which ends the task above.
                await node.transceiver.stop()
            }
        }
    }
}

extension Listen {
    /// A message parleyd forwarded: `@<sender id>/<Type>` and the untouched payload.
    private struct Forwarded: Sendable {
        var sender: String
        var typeName: String
        var payload: Data
    }

    /// Subscribes with parleyd and prints what it forwards until SIGINT/SIGTERM (exit 0) or until parleyd closes
    /// the connection (exit 5). Sender names come from parleyd's peer list, asked again for an unknown sender.
    private func listenThroughDaemon() async throws {
        let (stream, continuation) = AsyncStream.makeStream(of: Forwarded.self)
        let client = DaemonClient(socketPath: daemon.socketPath, name: connection.name, logLevel: connection.logLevel, offersDirect: true)
        client.transceiver.receiveUnhandled { message, _ in
            guard let routed = RoutedType(parsing: message.typeName) else { return }
            continuation.yield(Forwarded(sender: routed.target, typeName: routed.typeName, payload: Data(message.payload.readableBytesView)))
        }
        let events = client.transceiver.peerEvents
        let json = format.json
        let types = types
        try await client.run { client in
            _ = try await client.control(Control.Subscribe(types: types), expecting: Control.OK.self)
            Output.error("parleyctl: listening for \(types.isEmpty ? "all message types" : types.joined(separator: ", ")) through parleyd (\(client.socketPath)); Ctrl-C to stop")
            defer { continuation.finish() }
            try await client.stream(watching: events) {
                var names: [String: Control.PeerInfo] = [:]
                for await message in stream {
                    if names[message.sender] == nil, let peers = try? await client.peers() {
                        for peer in peers { names[peer.id] = peer }
                    }
                    let peer = names[message.sender]
                    let record = PeerRecord(name: peer?.name ?? "?", id: message.sender, address: peer?.address ?? "?")
                    if json {
                        Output.json(MessageRecord(type: message.typeName, from: record, receivedAt: Date()), splicing: message.payload, as: "payload")
                    } else {
                        Output.line("\(message.typeName) from \(record.name.shown) (\(message.sender.prefix(8))): \(String(decoding: message.payload, as: UTF8.self))")
                    }
                }
            }
        }
    }
}

private struct MessageRecord: Encodable {
    var type: String
    var from: PeerRecord
    var receivedAt: Date
}
