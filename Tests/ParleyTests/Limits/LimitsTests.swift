import Foundation
import Logging
import NIOEmbedded
import NIOCore
@testable import Parley
import ParleyTestSupport
import ParleyWire
import Synchronization
import Testing

/// Each connection limit (docs/security.md, "Bounded resources"): the connection that goes past it is closed or refused
/// with the limit's close code and a logged reason, while a peer connected before keeps working and a peer connecting
/// after is served.
@Suite("Connection limits", .timeLimit(.minutes(3)))
struct LimitsTests {
    /// Starts a server with `adjust`ed limits and a peer connected to it, runs `attack`, then checks that the
    /// peer connected before still gets replies and that a new peer can connect and get replies too.
    func withServer(
        _ adjust: (inout TransceiverConfiguration) -> Void,
        _ attack: (_ server: Transceiver, _ before: Peer, _ client: Transceiver, _ logs: LogCapture) async throws -> Void
    ) async throws {
        let logs = LogCapture()
        let server = makeTransceiver("server", logs: logs, adjust: adjust)
        let before = makeTransceiver("before", listen: nil)
        let after = makeTransceiver("after", listen: nil)
        server.respond(to: Echo.self) { echo, _ in echo }
        try await withRunning([server, before, after]) {
            let early = try await before.connect(to: server.loopbackEndpoint)
            try await attack(server, early, before, logs)
            #expect(try await before.request(Echo(text: "before"), from: early, expecting: Echo.self).text == "before")
            let late = try await after.connect(to: server.loopbackEndpoint)
            #expect(try await after.request(Echo(text: "after"), from: late, expecting: Echo.self).text == "after")
            #expect(Set(server.peers.map(\.name)).isSuperset(of: ["before", "after"]))
        }
    }

    static func closeCodes(_ frames: [Frame]) -> [ErrorCode] {
        frames.compactMap { if case .close(let close) = $0 { close.code } else { nil } }
    }

    static func message(_ typeName: String, id: UInt64) -> Frame {
        .message(MessageFrame(header: MessageHeader(typeName: typeName, id: MessageID(id)), payload: ByteBuffer(string: "{}")))
    }

    // MARK: - Connections that never speak

    @Test("connections that never send a byte cannot lock a new peer out: they hold only the pending pool, and from half full their handshake clock runs from accept")
    func silentFlood() async throws {
        try await withServer({
            $0.maximumPendingConnections = 8
            $0.maximumPendingConnectionsPerAddress = 4
            $0.handshakeTimeout = .seconds(1)
        }) { server, _, _, logs in
            var silent: [RawConnection] = []
            for index in 0..<8 { silent.append(try await RawConnection.open(port: server.listeningPort!, from: "127.0.0.\(index % 4 + 2)")) }
            #expect(await eventually { server.admission.pendingCount + server.statistics.protocolErrors >= 8 })
            // Those accepted once the pool was half full are closed by the handshake deadline, silent as they are;
            // the first four wait for a byte as before (an app of the original debugger may be one of them).
            #expect(await eventually { server.admission.pendingCount == 4 })
            #expect(server.admission.held.network >= 5, "the established peer and the four early silent ones")
            _ = (silent, logs)
        }
    }

    // MARK: - Connections in all

    @Test("beyond maximumConnections a Parley peer gets too-many-connections, an original-debugger app no byte at all")
    func totalConnections() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("parley-limits-\(UUID().uuidString.prefix(8))")
        let path = directory.appendingPathComponent("node.sock").path
        defer { try? FileManager.default.removeItem(at: directory) }
        try await withServer({
            $0.maximumConnections = 3
            // A refused peer's first byte must be read within this for it to get a close frame; in a full run the
            // shared event loops are sometimes busy for a second.
            $0.handshakeTimeout = .seconds(2)
            $0.controlSocketPath = path
        }) { server, _, _, logs in
            // `before` holds one slot; two raw connections take the others.
            var holders = [try await RawConnection.open(port: server.listeningPort!), try await RawConnection.open(port: server.listeningPort!)]
            for holder in holders { try await holder.write(rawHello()) }
            // The limit counts connections that completed their handshake: wait for the holders' hellos to be taken.
            #expect(await eventually(peersOf: server) { $0.filter { $0.name == "raw" }.count == 2 })

            let parley = try await RawConnection.open(port: server.listeningPort!)
            try await parley.write(rawHello())
            let (frames, closed) = try await parley.frames()
            #expect(closed)
            #expect(Self.closeCodes(frames) == [.tooManyConnections], "\(frames)")

            // An app of the original debugger must never see a Parley frame: it is closed without a byte.
            let original = try await RawConnection.open(port: server.listeningPort!)
            let json = #"{"state":{},"action":"tap"}"#
            try await original.write([206] + withUnsafeBytes(of: Int32(json.utf8.count).littleEndian, Array.init) + Array(json.utf8))
            let originalReceived = try await original.bytes()
            #expect(originalReceived.closed && originalReceived.bytes.isEmpty, "\(originalReceived.bytes)")

            // Saying nothing at all: closed after the handshake timeout, also without a byte.
            let silent = try await RawConnection.open(port: server.listeningPort!).bytes()
            #expect(silent.closed && silent.bytes.isEmpty)

            let refusals = logs.records(mentioning: "maximumConnections=3")
            #expect(refusals.first?.message == "connection refused: too many connections", "\(logs.all.map(\.message))")
            #expect(refusals.first?.metadata["remote"]?.hasPrefix("127.0.0.1:") == true, "\(refusals)")
            #expect(server.statistics.connectionsRefused == 3)
            #expect(server.peers.filter { $0.name == "raw" }.count == 2, "the admitted connections are served")

            // The control socket is counted apart: a local tool still gets in while the network is full.
            let tool = makeTransceiver("tool", listen: nil)
            try await withRunning([tool]) {
                let local = try await tool.connect(toUnixSocket: path)
                #expect(try await tool.request(Echo(text: "local"), from: local, expecting: Echo.self).text == "local")
            }

            holders.removeAll()  // closes them: their slots come free for the peer connecting after
            #expect(await eventually { server.admission.held.network == 1 })
        }
    }

    // MARK: - Connections per address

    @Test("beyond maximumConnectionsPerAddress one address is refused while others connect; local clients are not counted")
    func perAddress() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("parley-limits-\(UUID().uuidString.prefix(8))")
        let path = directory.appendingPathComponent("node.sock").path
        defer { try? FileManager.default.removeItem(at: directory) }
        try await withServer({
            $0.maximumConnectionsPerAddress = 2
            $0.controlSocketPath = path
        }) { server, _, _, logs in
            // 127.0.0.2 is another "host" on loopback; `before` and `after` come from 127.0.0.1.
            let first = try await RawConnection.open(port: server.listeningPort!, from: "127.0.0.2")
            let second = try await RawConnection.open(port: server.listeningPort!, from: "127.0.0.2")
            try await first.write(rawHello())
            try await second.write(rawHello())
            #expect(await eventually(peersOf: server) { $0.filter { $0.address.hasPrefix("127.0.0.2:") }.count == 2 })

            let third = try await RawConnection.open(port: server.listeningPort!, from: "127.0.0.2")
            try await third.write(rawHello())
            let (frames, closed) = try await third.frames()
            #expect(closed)
            let close = frames.compactMap { if case .close(let close) = $0 { close } else { nil } }.first
            #expect(close?.code == .tooManyConnections)
            #expect(close?.message.contains("127.0.0.2") == true, "\(String(describing: close))")
            let refusal = logs.records(mentioning: "maximumConnectionsPerAddress=2").first
            #expect(refusal?.metadata["address"] == "127.0.0.2", "\(logs.all.map(\.message))")

            // Three local clients, although the per-address limit is two: the control socket has no addresses.
            let tools = (1...3).map { makeTransceiver("tool-\($0)", listen: nil) }
            try await withRunning(tools) {
                for tool in tools {
                    let local = try await tool.connect(toUnixSocket: path)
                    #expect(try await tool.request(Echo(text: "local"), from: local, expecting: Echo.self).text == "local")
                }
            }
            _ = (first, second)  // held open until here
        }
    }

    // MARK: - Memory for large frames

    @Test("only a connection over the control socket gathers large frames in whole rooms of reused memory; a LAN peer's rooms grow with what it sent")
    func trustedRooms() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("parley-rooms-\(UUID().uuidString.prefix(8))")
        let path = directory.appendingPathComponent("node.sock").path
        defer { try? FileManager.default.removeItem(at: directory) }
        try await withServer({ $0.controlSocketPath = path }) { server, _, _, _ in
            let tool = makeTransceiver("tool", listen: nil)
            try await withRunning([tool]) {
                _ = try await tool.connect(toUnixSocket: path)
                #expect(await eventually { server.openConnections == (tcp: 1, local: 1) })
                // Each of the server's connections: whether it is local, and whether its decoder trusts the peer.
                var seen: [(local: Bool, trusted: Bool)] = []
                for connection in server.registry.connections {
                    let channel = connection.channel
                    let trusted = try await channel.eventLoop.submit {
                        try channel.pipeline.syncOperations.handler(type: FrameBatchDecoder.self).trustsPeer
                    }.get()
                    seen.append((channel.isLocalSocket, trusted))
                }
                #expect(seen.count == 2 && seen.allSatisfy { $0.local == $0.trusted }, "\(seen)")
            }
        }
    }

    // MARK: - Idle timeout

    @Test("a connection with no message either way for idleTimeout is closed with idle-timeout; heartbeats do not count")
    func idleTimeout() async throws {
        try await withServer({ $0.idleTimeout = .seconds(6) }) { server, early, before, logs in
            // Kept busy in both directions: `before` sends requests, and the server sends to `listener` (which
            // itself never sends a message). Neither may be closed.
            let listener = makeTransceiver("listener", listen: nil)
            let idler = makeTransceiver("idler", listen: nil)  // connected, pings and pongs, never a message
            try await withRunning([listener, idler]) {
                let (frames, closed) = try await withThrowingTaskGroup(of: ([Frame], Bool)?.self) { group in
                    // Busy from the start: on a loaded machine connecting the others may take longer than the timeout.
                    group.addTask {
                        while !Task.isCancelled {
                            _ = try await before.request(Echo(text: "busy"), from: early, expecting: Echo.self)
                            if let listenerID = server.peers.first(where: { $0.name == "listener" })?.id {
                                try await server.sendRaw(typeName: "test.Ignored", payload: ByteBuffer(string: "{}"), to: listenerID)
                            }
                            // Real sleep: a peer that is busy at a human pace, well under every limit.
                            try await Task.sleep(for: .milliseconds(250))
                        }
                        return nil
                    }
                    try await listener.connect(to: server.loopbackEndpoint)
                    try await idler.connect(to: server.loopbackEndpoint)
                    let raw = try await RawConnection.open(port: server.listeningPort!)
                    try await raw.write(rawHello())
                    #expect(await eventually(peersOf: server) { $0.count == 4 })
                    group.addTask { try await raw.frames() }
                    let result = try await group.next()!!
                    // The busy loop ran across the idle timeout; wait for the idler's turn, then stop it.
                    #expect(await eventually(peersOf: server) { !$0.contains { $0.name == "idler" } })
                    group.cancelAll()
                    return result
                }
                #expect(closed)
                #expect(Self.closeCodes(frames) == [.idleTimeout], "\(frames)")
                // The raw peer read its close frame; the server notes the end a moment later.
                #expect(await eventually(peersOf: server) { Set($0.map(\.name)) == ["before", "listener"] }, "\(server.peers)")
                let line = try #require(logs.records(mentioning: "idle timeout").first)
                #expect(line.metadata["limit"] == "idleTimeout=6 s", "\(line)")
                #expect(server.statistics.idleConnectionsClosed == 2)
            }
        }
    }

    // MARK: - Messages per second

    @Test("a peer sending faster than the rate limit is closed with rate-limited; one within it is not")
    func rateLimit() async throws {
        try await withServer({ $0.messageRateLimit = MessageRateLimit(perSecond: 20, burst: 10) }) { server, early, before, logs in
            let flooder = try await RawConnection.open(port: server.listeningPort!)
            try await flooder.write(rawHello())
            var flood = ByteBuffer()
            for id in 1...200 { Self.message("test.Flood", id: UInt64(id)).write(to: &flood) }
            try await flooder.write(Array(flood.readableBytesView))
            let (frames, closed) = try await flooder.frames()
            #expect(closed)
            #expect(Self.closeCodes(frames) == [.rateLimited], "\(frames)")
            let line = try #require(logs.records(mentioning: "rate limit").first)
            #expect(line.metadata["limit"] == "messageRateLimit=20/s burst 10", "\(line)")
            #expect(server.statistics.rateLimitedConnections == 1)

            // A peer at half the limit is never closed: PipelineHandlerTests.rateLimit, on the loop's clock.
            #expect(try await before.request(Echo(text: "still served"), from: early, expecting: Echo.self).text == "still served")
            #expect(server.statistics.rateLimitedConnections == 1)
        }
    }

    // MARK: - Outbound queue

    @Test("a peer that never reads: send waits at the queue limit, broadcast drops it, the others are served")
    func outboundQueue() async throws {
        let blobSize = 256 * 1024
        let received = Counter()
        try await withServer({
            $0.outboundHighWatermark = 256 * 1024
            $0.outboundLowWatermark = 64 * 1024
            $0.slowPeerTimeout = .seconds(1)
        }) { server, _, before, logs in
            before.receiveRaw(typeName: RawBlob.typeName) { _, _ in received.increment() }
            let stalled = try await RawConnection.open(port: server.listeningPort!, reading: false)
            try await stalled.write(rawHello(json: #"{"peerID":"\#(UUID().uuidString)","name":"stalled","capabilities":[],"accepts":[]}"#))
            #expect(await eventually(peersOf: server) { $0.contains { $0.name == "stalled" } })
            let stalledID = try #require(server.peers.first { $0.name == "stalled" }).id
            let blob = RawBlob.payload(size: blobSize)

            let sent = Counter()
            let sender = Task {
                for _ in 0..<100 {
                    try await server.sendRaw(typeName: RawBlob.typeName, payload: blob, to: stalledID)
                    sent.increment()
                }
            }
            // The kernel's buffers take some; then send waits instead of queueing 25 MB.
            #expect(await eventually { server.registry.connection(for: stalledID)?.outbound.waitingSenders == 1 })
            let queued = server.registry.connection(for: stalledID)?.outbound.queuedBytes ?? -1
            #expect(sent.count < 100)
            #expect(queued >= 0 && queued <= 256 * 1024 + blobSize + 4096, "\(queued) bytes queued")

            var rounds = 0
            while server.statistics.slowPeersDropped == 0 && rounds < 100 {
                _ = try await server.broadcastRaw(typeName: RawBlob.typeName, payload: blob)
                rounds += 1
            }
            #expect(server.statistics.slowPeersDropped == 1)
            #expect(!logs.records(mentioning: "disconnecting slow peer").isEmpty)
            #expect(await eventually(peersOf: server) { !$0.contains { $0.name == "stalled" } })
            await #expect(throws: (any Error).self) { try await sender.value }
            let broadcasts = rounds
            #expect(await eventually { received.count == broadcasts })
        }
    }

    // MARK: - Frame size and handshake timeout

    @Test("a frame above maximumFrameSize closes that connection with frame-too-large")
    func frameSize() async throws {
        try await withServer({ $0.maximumFrameSize = 1024 }) { server, _, _, logs in
            let socket = try await RawConnection.open(port: server.listeningPort!)
            try await socket.write(rawHello())
            try await socket.write([207] + withUnsafeBytes(of: UInt32(1025).littleEndian, Array.init) + [0x10])
            let (frames, closed) = try await socket.frames()
            #expect(closed)
            #expect(Self.closeCodes(frames) == [.frameTooLarge], "\(frames)")
            #expect(await logs.logged(mentioning: "exceeds the maximum of 1024 bytes"))
        }
    }

    @Test("a connection that starts but does not finish its hello within handshakeTimeout is closed with handshake-timeout")
    func handshakeTimeout() async throws {
        try await withServer({ $0.handshakeTimeout = .seconds(1) }) { server, _, _, logs in
            let socket = try await RawConnection.open(port: server.listeningPort!)
            try await socket.write([207, 40, 0])  // a start byte and half a length, then nothing
            let (frames, closed) = try await socket.frames()
            #expect(closed)
            #expect(Self.closeCodes(frames) == [.handshakeTimeout], "\(frames)")
            #expect(await logs.logged(mentioning: "no hello within 1.0 s"))
        }
    }
}
