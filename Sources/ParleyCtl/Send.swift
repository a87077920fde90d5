import ArgumentParser
import Foundation
import NIOCore
import Parley
import ParleyControl

struct Send: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Send a typed message to a peer; with --reply, print its answer.",
        discussion: """
            Goes through parleyd's control socket (--socket), or with --direct runs
            its own transceiver. Waits up to --wait-peer seconds for a connected
            peer: the one --to names, else one whose hello accepts TYPE (when several
            do, send names them and asks for --to; with --direct --peer, the first to
            answer there). Resolves a short TYPE against the types the peer accepts
            (AddItemCommand -> listr.AddItemCommand when that is the only match),
            checks that the payload is JSON and sends it unchanged. With --reply it
            sends a request and prints the reply: the text of a CLIResponse
            {"message": ...}; the bytes of a CLIResponse {"data": ...} go to
            --output FILE (- for standard output; an existing FILE is replaced only
            with --force); any other reply is printed as its JSON.

            Examples:
              parleyctl send AddItemCommand '{"title":"milk"}' --reply
              parleyctl send AddItemCommand '{"title":"milk"}' --direct --reply
              parleyctl send ListItemsCommand --direct --reply --peer 10.0.0.2:7206
              echo '{}' | parleyctl send ListItemsCommand - --direct --reply
              parleyctl send DumpDatabaseCommand --direct --reply --output list.json
            """
    )

    @Argument(help: "The message type name, or a short name resolved against the peer's accepted types.")
    var type: String

    @Argument(help: ArgumentHelp("The payload as JSON text, or - to read it from standard input.", valueName: "json|-"))
    var payload: String = "{}"

    @OptionGroup var connection: DirectOptions

    @OptionGroup var daemon: DaemonOptions

    @Option(
        help: ArgumentHelp(
            "Send to the peer with this name or peer-id prefix (default: the peer whose hello accepts TYPE; when several do, send names them and asks for --to).",
            valueName: "name|id"
        ),
        completion: LiveCompletions.peerNames
    )
    var to: String?

    @Option(help: ArgumentHelp(
        "Seconds to wait for the peer (default 20). Without it, send fails at once when peers are connected and none is the one wanted; with it, send waits for one to come.",
        valueName: "seconds"))
    var waitPeer: Double?

    @Flag(help: "Send a request and print the reply.")
    var reply = false

    @Option(help: "Seconds to wait for the reply.")
    var replyTimeout: Double = 5

    @Option(help: ArgumentHelp("With --reply: write the bytes of a data reply to this file (- for standard output).", valueName: "file"))
    var output: String?

    @Flag(help: "With --output FILE: overwrite FILE if it exists.")
    var force = false

    @OptionGroup var format: OutputOptions

    static let defaultWaitPeer = 20.0

    func validate() throws {
        if let waitPeer { try validatePositive(waitPeer, "--wait-peer") }
        try validatePositive(replyTimeout, "--reply-timeout")
        let length = type.utf8.count
        guard (1...1024).contains(length) else { throw ValidationError("TYPE must be 1…1024 bytes of UTF-8") }
        if output != nil, !reply { throw ValidationError("--output needs --reply") }
        if force, output == nil { throw ValidationError("--force only applies with --output FILE") }
    }

    func run() async throws {
        // Before anything is sent: a request may change something on the peer, and its answer would have nowhere to go.
        if let output, output != "-" { try OutputFile.refuseToOverwrite(output, force: force) }
        let payloadBytes = try await readPayload()
        guard connection.direct else {
            try await DaemonClient(
                socketPath: daemon.socketPath, name: connection.name, logLevel: connection.logLevel, offersDirect: true, awaitsReply: reply
            ).run { client in
                try await sendThroughDaemon(payloadBytes, client: client)
            }
            return
        }
        let node = try DirectNode(connection, awaitsReply: reply)
        try await node.run {
            let peer = try await node.waitForPeer(wanted, timeout: seconds(waitPeer ?? Self.defaultWaitPeer))
            let typeName = try resolveType(for: peer.name, accepts: peer.accepts)
            let buffer = ByteBuffer(bytes: payloadBytes)
            if reply {
                let answer = try await awaitingReply(to: typeName, from: peer.name, id: peer.id.rawValue) {
                    try await node.transceiver.requestRaw(typeName: typeName, payload: buffer, from: peer.id, timeout: seconds(replyTimeout))
                }
                try show(answer.typeName, Data(answer.payload.readableBytesView), from: PeerRecord(peer))
            } else {
                try await node.transceiver.sendRaw(typeName: typeName, payload: buffer, to: peer.id)
                sent(typeName, bytes: payloadBytes.count, to: PeerRecord(peer))
            }
        }
    }

    /// Through parleyd: the peer gate polls parleyd's peer list; the message goes out as `@<peer id>/<Type>`, and
    /// parleyd forwards it (and relays the reply) with the payload untouched.
    private func sendThroughDaemon(_ payloadBytes: Data, client: DaemonClient) async throws {
        if waitPeer == nil {
            // Peers there and none of them the one wanted (a misspelt type or name): say so now, not in 20 s.
            let connected = try await client.peers().filter(\.connected)
            if let mismatch = wanted.mismatch(among: connected, id: \.id, name: \.name, accepts: \.accepts) {
                throw CtlFailure(.noPeer, mismatch + "; --wait-peer SECONDS waits for another to connect")
            }
        }
        let peer = try await client.waitForPeer(wanted, timeout: seconds(waitPeer ?? Self.defaultWaitPeer))
        let typeName = try resolveType(for: peer.name, accepts: peer.accepts)
        let routed = RoutedType(target: peer.id, typeName: typeName).wireName
        let buffer = ByteBuffer(bytes: payloadBytes)
        let record = PeerRecord(name: peer.name, id: peer.id, address: peer.address)
        guard let daemonPeer = client.daemon else { return }
        do {
            if reply {
                let answer = try await awaitingReply(to: typeName, from: peer.name, id: peer.id) {
                    try await client.transceiver.requestRaw(typeName: routed, payload: buffer, from: daemonPeer.id, timeout: seconds(replyTimeout))
                }
                try show(answer.typeName, Data(answer.payload.readableBytesView), from: record)
            } else {
                try await client.transceiver.sendRaw(typeName: routed, payload: buffer, to: daemonPeer.id)
                sent(typeName, bytes: payloadBytes.count, to: record)
            }
        } catch let error as TransceiverError {
            throw error.naming(typeName, insteadOf: routed)
        }
    }

    /// A request's reply; none within --reply-timeout is exit status 4, saying which option waits longer.
    private func awaitingReply(
        to typeName: String, from peerName: String, id: String, _ request: () async throws -> InboundMessage
    ) async throws -> InboundMessage {
        do {
            return try await request()
        } catch TransceiverError.replyTimedOut {
            throw CtlFailure(
                .noReply,
                "no reply to \(typeName) from \(peerName.shown) (\(id.prefix(8))) within \(seconds(replyTimeout).secondsText); "
                    + "is the peer busy or stuck? --reply-timeout SECONDS waits longer"
            )
        }
    }

    /// The peer to wait for: the one `--to` names; else, with `--peer`, whoever answers there (the user chose it);
    /// else one whose hello says it accepts TYPE, so that another parleyd on the LAN is not picked by accident.
    private var wanted: WantedPeer {
        let chosen = to != nil || (connection.direct && !connection.peers.isEmpty)
        return WantedPeer(selector: to, acceptingType: chosen ? nil : type)
    }

    /// The full type name for this peer (see ``resolveTypeName(_:accepts:)``), with a warning when the peer does
    /// not list it.
    private func resolveType(for peerName: String, accepts: [String]) throws -> String {
        let typeName = try resolveTypeName(type, accepts: accepts)
        if !accepts.isEmpty, !accepts.contains(typeName) {
            Output.error(
                "parleyctl: warning: \(peerName) does not list \(typeName) among the types it accepts "
                    + "(\(accepts.sorted().joined(separator: ", "))); sending anyway"
            )
        }
        return typeName
    }

    private func sent(_ typeName: String, bytes: Int, to peer: PeerRecord) {
        if format.json {
            Output.json(SentRecord(sent: typeName, bytes: bytes, to: peer))
        } else {
            Output.line("sent \(typeName) (\(bytes) bytes) to \(peer.name.shown) (\(peer.id.prefix(8)))")
        }
    }

    /// The payload argument, or standard input for `-`, checked to be JSON (exit status 2 otherwise).
    private func readPayload() async throws -> Data {
        let data: Data
        let source: String
        if payload == "-" {
            data = try await InputFiles.standardInput()
            source = "standard input"
        } else {
            data = Data(payload.utf8)
            source = "the JSON argument"
        }
        guard JSONText.isValid(data) else {
            let text = String(decoding: data.prefix(80), as: UTF8.self)
            throw CtlFailure.usage(
                "\(source) is not valid JSON: '\(text)\(data.count > 80 ? "…" : "")'"
                    + " (a string needs quotes: '\"milk\"'; an object: '{\"title\":\"milk\"}')"
            )
        }
        return data
    }

    /// Prints a reply: a CLIResponse's text, its data (to --output), or the raw JSON.
    private func show(_ replyType: String, _ bytes: Data, from peer: PeerRecord) throws {
        let response = try? JSONDecoder().decode(CLIResponse.self, from: bytes)
        if case .data(let data)? = response, let output {
            try write(data, to: output)
            if !format.json, output != "-" { Output.line("wrote \(data.count) bytes to \(output)") }
        }
        if format.json {
            if output != "-" {
                Output.json(ReplyRecord(type: replyType, from: peer), splicing: bytes, as: "payload")
            }
            return
        }
        switch response {
        case .message(let text)?:
            Output.line(text)
        case .data(let data)?:
            if output == nil {
                Output.line("the reply holds \(data.count) bytes of data; use --output FILE to write them to a file")
            }
        case nil:
            Output.line(String(decoding: bytes, as: UTF8.self))
        }
    }

    private func write(_ data: Data, to path: String) throws {
        if path == "-" {
            Output.bytes(data)
            return
        }
        try OutputFile.write(data, to: path, force: force)
    }
}

/// A peer in JSON output.
struct PeerRecord: Encodable {
    var name: String
    var id: String
    var address: String

    init(_ peer: Peer) {
        self.init(name: peer.name, id: peer.id.rawValue, address: peer.address)
    }

    init(name: String, id: String, address: String) {
        self.name = name
        self.id = id
        self.address = address
    }
}

private struct SentRecord: Encodable {
    var sent: String
    var bytes: Int
    var to: PeerRecord
}

private struct ReplyRecord: Encodable {
    var type: String
    var from: PeerRecord
}

extension TransceiverError {
    /// The error with the type as the person wrote it: `@<peer id>/<Type>` is how parleyctl addresses parleyd, not
    /// a name anyone should read.
    func naming(_ typeName: String, insteadOf routed: String) -> TransceiverError {
        switch self {
        case .messageTooLarge(routed, let size, let maximum): .messageTooLarge(type: typeName, size: size, maximum: maximum)
        case .invalidTypeName(routed): .invalidTypeName(typeName)
        case .encodingFailed(routed, let underlying): .encodingFailed(type: typeName, underlying: underlying)
        case .replyTimedOut(routed, let peer, let timeout): .replyTimedOut(type: typeName, peer: peer, timeout: timeout)
        case .unexpectedReply(let expected, routed, let underlying): .unexpectedReply(expected: expected, received: typeName, underlying: underlying)
        default: self
        }
    }
}
