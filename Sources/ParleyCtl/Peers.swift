import ArgumentParser
import Foundation
import Parley
import ParleyControl

struct Peers: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the peers: name, id, addresses, connected or not and since when, messages in and out.",
        discussion: """
            Through parleyd (--socket): the LAN peers parleyd is connected to, with the
            messages in and out on each of its connections, and the Parley peers it
            sees advertised but is not connected to.

            With --direct, discovers peers (or connects to --peer HOST:PORT) for
            --wait seconds, then lists those connected; with --peer it stops waiting
            as soon as every endpoint is connected. The message counts are those of
            this short-lived connection.

            With --wait-for NAME, parleyctl first waits (up to --wait seconds) until a
            peer of that name or id prefix is connected: exit status 3 if none is.

            Examples:
              parleyctl peers
              parleyctl peers --wait-for listr --wait 10
              parleyctl peers --direct
              parleyctl peers --direct --peer 127.0.0.1:7206 --json
            """
    )

    @Option(help: "With --direct: seconds to discover and connect before listing; with --wait-for: seconds to wait.")
    var wait: Double = 3

    @Option(name: .customLong("wait-for"), help: ArgumentHelp("Wait until this peer (name or id prefix) is connected, then list.", valueName: "peer"), completion: LiveCompletions.peerNames)
    var waitFor: String?

    @OptionGroup var connection: DirectOptions

    @OptionGroup var daemon: DaemonOptions

    @OptionGroup var format: OutputOptions

    func validate() throws {
        try validatePositive(wait, "--wait")
        if waitFor != nil && connection.direct { throw ValidationError("--wait-for works through parleyd; with --direct, use --peer") }
    }

    func run() async throws {
        let listings: [PeerListing]
        if connection.direct {
            let node = try DirectNode(connection)
            let wanted = connection.endpoints.count
            let peers = try await node.run {
                // Until every --peer is connected (on connection events), or --wait is up. Without --peer, the whole
                // --wait is a window for discovery to connect whom it finds.
                let events = node.transceiver.peerEvents
                await withTaskGroup(of: Void.self) { group in
                    if wanted > 0 {
                        group.addTask {
                            if node.transceiver.peers.count >= wanted { return }
                            for await _ in events where node.transceiver.peers.count >= wanted { return }
                        }
                    }
                    group.addTask { try? await Task.sleep(for: seconds(wait)) }
                    await group.next()
                    group.cancelAll()
                }
                return node.transceiver.peers.map { peer in
                    (peer, node.transceiver.messageCounts(for: peer.id) ?? (received: 0, sent: 0))
                }
            }
            listings = peers.map { peer, counts in
                PeerListing(
                    name: peer.name, id: peer.id.rawValue, kind: Control.PeerInfo(peer, counts: counts).kind, address: peer.address,
                    addresses: [peer.address], connected: true, connectedAt: peer.connectedAt,
                    messagesIn: counts.received, messagesOut: counts.sent, accepts: peer.accepts
                )
            }
        } else {
            let client = DaemonClient(socketPath: daemon.socketPath, name: connection.name, logLevel: connection.logLevel, offersDirect: true)
            let waitFor = self.waitFor
            let timeout = seconds(wait)
            listings = try await client.run { client in
                if let waitFor { _ = try await client.waitForPeer(WantedPeer(selector: waitFor), timeout: timeout) }
                return try await client.peers()
            }.map { peer in
                PeerListing(
                    name: peer.name, id: peer.id, kind: peer.kind, address: peer.address, addresses: peer.addresses,
                    connected: peer.connected, connectedAt: peer.connectedDate, messagesIn: peer.messagesIn,
                    messagesOut: peer.messagesOut, accepts: peer.accepts, domain: peer.domain
                )
            }
            // parleyd pages by id; people read the connected ones first.
            .sorted { ($0.connected ? 0 : 1, $0.name, $0.id) < ($1.connected ? 0 : 1, $1.name, $1.id) }
        }
        if format.json {
            for listing in listings { Output.json(listing) }
            return
        }
        guard !listings.isEmpty else {
            Output.error(connection.direct ? "parleyctl: no peers connected within \(wait) s" : "parleyctl: parleyd has no peers connected")
            return
        }
        // The domain column only when a peer was found beyond the link (wide-area DNS-SD).
        let showsDomain = listings.contains { ($0.domain ?? "local") != "local" }
        let rows = listings.map { peer in
            let since = peer.connectedAt.map { "since " + Table.time($0) } ?? ""
            return [peer.name, peer.id, peer.addresses.joined(separator: ",")]
                + (showsDomain ? [peer.domain ?? ""] : [])
                + [peer.connected ? "yes, \(since)" : "no", "\(peer.messagesIn)", "\(peer.messagesOut)"]
        }
        Table.print(
            ["NAME", "ID", "ADDRESS"] + (showsDomain ? ["DOMAIN"] : []) + ["CONNECTED", "IN", "OUT"], rows,
            caps: [32, 36, 48] + (showsDomain ? [24] : []) + [36, 10]
        )
    }
}

private struct PeerListing: Encodable {
    var name: String
    var id: String
    var kind: String
    var address: String
    var addresses: [String]
    var connected: Bool
    var connectedAt: Date?
    var messagesIn: Int
    var messagesOut: Int
    var accepts: [String]
    var domain: String? = nil
}

