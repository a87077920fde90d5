import ArgumentParser
import Foundation
import Parley

struct Peers: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the connected peers: name, id, address, connected since, messages in and out.",
        discussion: """
            With --direct, discovers peers (or connects to --peer HOST:PORT) for
            --wait seconds, then lists those connected; with --peer it stops waiting
            as soon as every endpoint is connected. The message counts are those of
            this short-lived connection; parleyd will report its own.

            Examples:
              parleyctl peers --direct
              parleyctl peers --direct --peer 127.0.0.1:7206 --json
            """
    )

    @Option(help: "Seconds to discover and connect before listing.")
    var wait: Double = 3

    @OptionGroup var connection: DirectOptions

    @OptionGroup var format: OutputOptions

    func validate() throws {
        try validatePositive(wait, "--wait")
    }

    func run() async throws {
        try connection.requireDirect("peers")
        let node = DirectNode(connection)
        let wanted = connection.endpoints.count
        let peers = try await node.run {
            let deadline = ContinuousClock.now + seconds(wait)
            while ContinuousClock.now < deadline {
                if wanted > 0, node.transceiver.peers.count >= wanted { break }
                try await Task.sleep(for: .milliseconds(50))
            }
            return node.transceiver.peers.map { peer in
                (peer, node.transceiver.messageCounts(for: peer.id) ?? (received: 0, sent: 0))
            }
        }
        if format.json {
            for (peer, counts) in peers {
                Output.json(
                    PeerListing(
                        name: peer.name, id: peer.id.rawValue, kind: peer.kind.rawValue, address: peer.address,
                        connectedAt: peer.connectedAt, messagesIn: counts.received, messagesOut: counts.sent,
                        accepts: peer.accepts
                    )
                )
            }
            return
        }
        guard !peers.isEmpty else {
            Output.error("parleyctl: no peers connected within \(wait) s")
            return
        }
        let time = ISO8601DateFormatter()
        let rows = [["NAME", "ID", "ADDRESS", "CONNECTED SINCE", "IN", "OUT"]]
            + peers.map { peer, counts in
                [peer.name, peer.id.rawValue, peer.address, time.string(from: peer.connectedAt), "\(counts.received)", "\(counts.sent)"]
            }
        let widths = (0..<rows[0].count).map { column in rows.map { $0[column].count }.max() ?? 0 }
        for row in rows {
            Output.line(
                zip(row, widths).map { cell, width in cell.padding(toLength: width, withPad: " ", startingAt: 0) }
                    .joined(separator: "  ").trimmingCharacters(in: .whitespaces)
            )
        }
    }
}

private struct PeerListing: Encodable {
    var name: String
    var id: String
    var kind: String
    var address: String
    var connectedAt: Date
    var messagesIn: Int
    var messagesOut: Int
    var accepts: [String]
}
