import Foundation
import NIOCore
@testable import Parley
import ParleyTestSupport
import ParleyWire
import Testing

@Suite("Messaging between transceivers in one process", .timeLimit(.minutes(2)))
struct MessagingTests {
    @Test("a typed message arrives with its value and the sending peer")
    func typedRoundTrip() async throws {
        let server = makeTransceiver("server")
        let client = makeTransceiver("client", listen: nil)
        let inbox = Inbox<(Echo, Peer)>()
        server.receive(Echo.self) { echo, peer in inbox.put((echo, peer)) }
        try await withRunning([server, client]) {
            let peer = try await client.connect(to: server.loopbackEndpoint)
            #expect(peer.name == "server" && peer.protocolVersion == ProtocolVersion.current)
            try await client.send(Echo(text: "hello"), to: peer)
            let (echo, sender) = try #require(try await inbox.take().first)
            #expect(echo == Echo(text: "hello"))
            #expect(sender.name == "client" && sender.id == client.localPeerID)
        }
    }

    @Test("broadcast reaches every one of three connected peers")
    func broadcastToThree() async throws {
        let hub = makeTransceiver("hub")
        let spokes = (1...3).map { makeTransceiver("spoke-\($0)", listen: nil) }
        let inbox = Inbox<String>()
        for spoke in spokes {
            spoke.receive(Echo.self) { echo, _ in inbox.put("\(spoke.configuration.name):\(echo.text)") }
        }
        try await withRunning([hub] + spokes) {
            for spoke in spokes { try await spoke.connect(to: hub.loopbackEndpoint) }
            #expect(await eventually(peersOf: hub) { $0.count == 3 })
            #expect(try await hub.broadcast(Echo(text: "all")) == 3)
            let received = try await inbox.take(3)
            #expect(Set(received) == ["spoke-1:all", "spoke-2:all", "spoke-3:all"])
        }
    }

    @Test("request/reply returns the typed reply; a slow responder times out with a typed error")
    func requestReply() async throws {
        let server = makeTransceiver("server")
        let client = makeTransceiver("client", listen: nil)
        server.respond(to: Echo.self) { echo, _ in Echo(text: echo.text.uppercased()) }
        // The responder answers only once the test has seen the request time out.
        let timedOut = Latch()
        server.respond(to: SlowRequest.self) { _, _ in
            try await timedOut.wait()
            return Echo(text: "late")
        }
        try await withRunning([server, client]) {
            let peer = try await client.connect(to: server.loopbackEndpoint)
            let reply = try await client.request(Echo(text: "ping"), from: peer, expecting: Echo.self)
            #expect(reply.text == "PING")
            do {
                _ = try await client.request(SlowRequest(milliseconds: 600), from: peer, expecting: Echo.self, timeout: .milliseconds(100))
                Issue.record("a slow reply did not time out")
            } catch TransceiverError.replyTimedOut(let type, let id, let timeout) {
                #expect(type == SlowRequest.messageType && id == peer.id && timeout == .milliseconds(100))
            }
            timedOut.open()
            // The reply that arrives later is counted, not mistaken for another request's answer.
            #expect(await eventually { client.statistics.lateReplies == 1 })
            #expect(try await client.request(Echo(text: "again"), from: peer, expecting: Echo.self).text == "AGAIN")
        }
    }

    @Test("a request relayed for a peer fails as soon as that peer leaves, instead of waiting out its timeout")
    func relayedRequestEndsWithItsRequester() async throws {
        let slow = makeTransceiver("slow")
        let relay = makeTransceiver("relay")
        let requester = makeTransceiver("requester", listen: nil)
        let released = Latch()
        slow.respond(to: SlowRequest.self) { _, _ in
            try await released.wait()
            return Echo(text: "late")
        }
        let relayed = Observed<(any Error)?>(nil)
        try await withRunning([slow, relay, requester]) {
            let slowPeer = try await relay.connect(to: slow.loopbackEndpoint)
            relay.respond(to: SlowRequest.self) { request, from in
                do {
                    let payload = try relay.encodePayload(request)
                    _ = try await relay.requestRaw(
                        typeName: SlowRequest.messageType, payload: payload, from: slowPeer.id, timeout: .seconds(60), for: from.id
                    )
                } catch {
                    relayed.update { $0 = error }
                    throw error
                }
                return Echo(text: "relayed")
            }
            let peer = try await requester.connect(to: relay.loopbackEndpoint)
            await #expect(throws: TransceiverError.self) {
                _ = try await requester.request(SlowRequest(milliseconds: 0), from: peer, expecting: Echo.self, timeout: .milliseconds(100))
            }
            await requester.stop()
            // Well before the relayed request's 60 s: it ends with the requester's goodbye.
            let error = try await relayed.wait(for: "the relayed request to end", timeout: .seconds(20)) { $0 }
            guard case TransceiverError.connectionClosed(let id, _) = error else {
                Issue.record("the relayed request ended with \(error)")
                return
            }
            #expect(id == requester.localPeerID)
            released.open()
        }
    }

    @Test("a request leaves nothing waiting in the table once it is answered, timed out or cancelled")
    func requestsLeaveNothingBehind() async throws {
        let server = makeTransceiver("server")
        let client = makeTransceiver("client", listen: nil)
        server.respond(to: Echo.self) { echo, _ in echo }
        let started = Inbox<Void>()
        let release = Latch()
        server.respond(to: SlowRequest.self) { _, _ in
            started.put(())
            try await release.wait()
            return Echo(text: "late")
        }
        try await withRunning([server, client]) {
            let peer = try await client.connect(to: server.loopbackEndpoint)
            _ = try await client.request(Echo(text: "a"), from: peer, expecting: Echo.self)
            #expect(client.requests.count == 0, "answered")

            let waiting = Task { try await client.request(SlowRequest(milliseconds: 0), from: peer, expecting: Echo.self) }
            try await started.next()
            #expect(client.requests.count == 1, "waiting for its reply")
            waiting.cancel()
            await #expect(throws: CancellationError.self) { try await waiting.value }
            #expect(client.requests.count == 0, "cancelled")

            // Behind the held handler (one connection's messages are handled in order): it cannot be answered in time.
            await #expect(throws: TransceiverError.self) {
                try await client.request(SlowRequest(milliseconds: 0), from: peer, expecting: Echo.self, timeout: .milliseconds(50))
            }
            #expect(client.requests.count == 0, "timed out")
            release.open()
        }
    }

    @Test("a handler may await a reply from the peer whose message it is handling")
    func nestedRequest() async throws {
        let server = makeTransceiver("server")
        let client = makeTransceiver("client", listen: nil)
        client.respond(to: Echo.self) { echo, _ in Echo(text: echo.text + " from client") }
        server.respond(to: ProgressQuery.self) { _, peer in
            // Ask the requester something before answering it, on the same connection.
            let inner = try await server.request(Echo(text: "inner"), from: peer, expecting: Echo.self)
            return Echo(text: inner.text)
        }
        try await withRunning([server, client]) {
            let peer = try await client.connect(to: server.loopbackEndpoint)
            let reply = try await client.request(ProgressQuery(), from: peer, expecting: Echo.self, timeout: .seconds(5))
            #expect(reply.text == "inner from client")
        }
    }

    @Test("a request of an unknown type, a failing handler and a wrong reply type give typed errors")
    func requestErrors() async throws {
        struct Failure: Error, CustomStringConvertible { var description: String { "disk full" } }
        let server = makeTransceiver("server")
        let client = makeTransceiver("client", listen: nil)
        server.respond(to: SlowRequest.self) { _, _ -> Echo in throw Failure() }
        server.respond(to: Echo.self) { echo, _ in echo }
        try await withRunning([server, client]) {
            let peer = try await client.connect(to: server.loopbackEndpoint)
            // Each call must fail, and with the error named: a call that returned would fail the test.
            let unknown = await #expect(throws: TransceiverError.self) {
                _ = try await client.request(ProgressQuery(), from: peer, expecting: Progress.self)
            }
            guard case .remoteError(let code, let message)? = unknown else {
                Issue.record("unknown type: \(String(describing: unknown))")
                return
            }
            #expect(code == .unknownType && message.contains(ProgressQuery.messageType))
            let failing = await #expect(throws: TransceiverError.self) {
                _ = try await client.request(SlowRequest(milliseconds: 0), from: peer, expecting: Echo.self)
            }
            guard case .remoteError(let code, let message)? = failing else {
                Issue.record("failing handler: \(String(describing: failing))")
                return
            }
            #expect(code == .handlerFailed && message.contains("disk full"))
            let wrongType = await #expect(throws: TransceiverError.self) {
                _ = try await client.request(Echo(text: "x"), from: peer, expecting: Progress.self)
            }
            guard case .unexpectedReply(let expected, let received, _)? = wrongType else {
                Issue.record("wrong reply type: \(String(describing: wrongType))")
                return
            }
            #expect(expected == Progress.messageType && received == Echo.messageType)
            #expect(server.statistics.unknownType == 1)
            #expect(server.statistics.handlerFailures == 1)
        }
    }

    @Test("unknown types and undecodable payloads are logged and counted, and the connection keeps working")
    func unknownAndUndecodable() async throws {
        let logs = LogCapture()
        let server = makeTransceiver("server", logs: logs)
        let client = makeTransceiver("client", listen: nil)
        let inbox = Inbox<Echo>()
        server.receive(Echo.self) { echo, _ in inbox.put(echo) }
        try await withRunning([server, client]) {
            let peer = try await client.connect(to: server.loopbackEndpoint)
            try await client.sendRaw(typeName: "nobody.Handles", payload: ByteBuffer(string: "{}"), to: peer.id)
            try await client.sendRaw(typeName: Echo.messageType, payload: ByteBuffer(string: #"{"txt":1}"#), to: peer.id)
            try await client.sendRaw(typeName: Echo.messageType, payload: ByteBuffer(string: "not json"), to: peer.id)
            try await client.send(Echo(text: "still here"), to: peer)
            #expect(try await inbox.take() == [Echo(text: "still here")])
            #expect(server.statistics.unknownType == 1)
            #expect(server.statistics.undecodable == 2)
            #expect(!logs.records(mentioning: "nobody.Handles").isEmpty)
            #expect(!logs.records(mentioning: "missing key \"text\"").isEmpty)
        }
    }

    @Test("a 16 MB message arrives whole")
    func sixteenMegabytes() async throws {
        let server = makeTransceiver("server")
        let client = makeTransceiver("client", listen: nil)
        server.respond(to: Blob.self) { blob, _ in BlobDigest(of: blob.data) }
        try await withRunning([server, client]) {
            let peer = try await client.connect(to: server.loopbackEndpoint)
            let data = RawBlob.data(size: 16 * 1024 * 1024)
            let digest = try await client.request(Blob(data: data), from: peer, expecting: BlobDigest.self, timeout: .seconds(60))
            #expect(digest == BlobDigest(of: data))
        }
    }

    @Test("10 000 messages arrive in order with none lost")
    func tenThousandInOrder() async throws {
        let server = makeTransceiver("server")
        let client = makeTransceiver("client", listen: nil)
        let tracker = SequenceTracker()
        server.receive(Sequenced.self) { message, _ in await tracker.record(message) }
        server.respond(to: ProgressQuery.self) { _, _ in await tracker.progress }
        try await withRunning([server, client]) {
            let peer = try await client.connect(to: server.loopbackEndpoint)
            for sequence in 0..<10_000 {
                try await client.send(Sequenced(sender: "client", sequence: sequence), to: peer)
            }
            // Requests travel on the same connection, so the answer comes after all 10 000 were handled: well under a
            // second alone, but the full suite on 2 cores has made it take more than five.
            let progress = try await client.request(ProgressQuery(), from: peer, expecting: Progress.self, timeout: .seconds(60))
            #expect(progress.received == 10_000 && progress.outOfOrder == 0 && progress.lastSequence["client"] == 9_999)
        }
    }

    @Test("two peers that connect to each other at the same moment end with one connection", arguments: 0..<10)
    func simultaneousConnect(round: Int) async throws {
        let a = makeTransceiver("a")
        let b = makeTransceiver("b")
        let inbox = Inbox<String>()
        a.receive(Echo.self) { echo, _ in inbox.put(echo.text) }
        try await withRunning([a, b]) {
            async let fromA = a.connect(to: b.loopbackEndpoint)
            async let fromB = b.connect(to: a.loopbackEndpoint)
            let (peerB, peerA) = try await (fromA, fromB)
            #expect(peerB.id == b.localPeerID && peerA.id == a.localPeerID)
            #expect(await eventually { a.connectionCount == 1 && b.connectionCount == 1 })
            #expect(a.peers.map(\.id) == [b.localPeerID] && b.peers.map(\.id) == [a.localPeerID])
            try await b.send(Echo(text: "after"), to: peerA)
            #expect(try await inbox.take() == ["after"])
        }
    }

    @Test("open handshake: when connect returns, the acceptor has registered the dialer too")
    func connectIsMutual() async throws {
        let b = makeTransceiver("b") { $0.maximumConnectionsPerAddress = nil }
        let dialers = (0..<40).map { makeTransceiver("dialer-\($0)", listen: nil) }
        try await withRunning([b] + dialers) {
            var unknownToB: [String] = []
            for dialer in dialers {
                _ = try await dialer.connect(to: b.loopbackEndpoint)
                if !b.peers.contains(where: { $0.id == dialer.localPeerID }) { unknownToB.append(dialer.configuration.name) }
            }
            #expect(unknownToB.isEmpty)
        }
    }

    @Test("a request being handled when its connection is retired as a duplicate is answered on the connection kept")
    func replyAfterDuplicateSwitch() async throws {
        // The connection kept is the one dialled by the smaller id: b's. a's request travels on a's, which loses.
        let a = makeTransceiver("a") { $0.identity = .fixed(PeerID(rawValue: "ffffffff-0000-4000-8000-000000000000")!) }
        let b = makeTransceiver("b") { $0.identity = .fixed(PeerID(rawValue: "00000000-0000-4000-8000-000000000000")!) }
        let handling = Inbox<String>()
        let release = Inbox<Void>()
        b.respond(to: Echo.self) { echo, _ in
            handling.put(echo.text)
            try await release.next()
            return Echo(text: "answer to \(echo.text)")
        }
        try await withRunning([a, b]) {
            let peerB = try await a.connect(to: b.loopbackEndpoint)
            async let reply = a.request(Echo(text: "question"), from: peerB, expecting: Echo.self, timeout: .seconds(20))
            #expect(try await handling.next() == "question")
            // b dials a while it is still handling: both sides retire a's connection in favour of b's.
            _ = try await b.connect(to: a.loopbackEndpoint)
            #expect(await eventually { a.connectionCount == 1 && b.connectionCount == 1 })
            release.put(())
            #expect(try await reply.text == "answer to question")
            #expect(a.peers.map(\.id) == [b.localPeerID])
        }
    }

    @Test("handlers belong to their transceiver: two in one process with the same type stay apart")
    func handlerIsolation() async throws {
        let first = makeTransceiver("first")
        let second = makeTransceiver("second")
        let client = makeTransceiver("client", listen: nil)
        let inbox = Inbox<String>()
        first.receive(Echo.self) { echo, _ in inbox.put("first:\(echo.text)") }
        second.receive(Echo.self) { echo, _ in inbox.put("second:\(echo.text)") }
        try await withRunning([first, second, client]) {
            let toFirst = try await client.connect(to: first.loopbackEndpoint)
            let toSecond = try await client.connect(to: second.loopbackEndpoint)
            try await client.send(Echo(text: "1"), to: toFirst)
            #expect(try await inbox.take() == ["first:1"])
            try await client.send(Echo(text: "2"), to: toSecond)
            #expect(try await inbox.take() == ["second:2"])
        }
    }

    @Test("IPv6 loopback works")
    func ipv6() async throws {
        let (peer, reply) = try await echoed("v6", listeningOn: "::1")
        #expect(peer.address.hasPrefix("[::1]:"))
        #expect(reply == "v6")
    }

    @Test("a host name is looked up, to listen on and to dial: localhost both ways")
    func hostNames() async throws {
        let (_, reply) = try await echoed("named", listeningOn: "localhost")
        #expect(reply == "named")
    }

    /// A server listening on `host`, a client dialling it by the same host and its port, and `text` echoed back:
    /// the peer the client got, and the text that came back.
    private func echoed(_ text: String, listeningOn host: String) async throws -> (peer: Peer, reply: String) {
        let server = makeTransceiver("server", listen: host)
        let client = makeTransceiver("client", listen: nil)
        server.respond(to: Echo.self) { echo, _ in echo }
        return try await withRunning([server, client]) {
            let peer = try await client.connect(to: Endpoint(host: host, port: server.listeningPort!))
            return (peer, try await client.request(Echo(text: text), from: peer, expecting: Echo.self).text)
        }
    }

    @Test("a transceiver refuses a connection to itself")
    func connectToSelf() async throws {
        let node = makeTransceiver("node")
        try await withRunning([node]) {
            await #expect(throws: TransceiverError.self) { try await node.connect(to: node.loopbackEndpoint) }
            #expect(node.peers.isEmpty)
        }
    }

    @Test("a message above the maximum frame size is refused before sending, with its size")
    func tooLargeToSend() async throws {
        let server = makeTransceiver("server")
        let client = makeTransceiver("client", listen: nil) { $0.maximumFrameSize = 1024 }
        try await withRunning([server, client]) {
            let peer = try await client.connect(to: server.loopbackEndpoint)
            do {
                try await client.send(Echo(text: String(repeating: "x", count: 2000)), to: peer)
                Issue.record("an oversized message was sent")
            } catch TransceiverError.messageTooLarge(let type, let size, let maximum) {
                #expect(type == Echo.messageType && size > 2000 && maximum == 1024)
            }
        }
    }

    @Test("a type name the protocol cannot carry is refused before sending")
    func invalidTypeName() async throws {
        let server = makeTransceiver("server")
        let client = makeTransceiver("client", listen: nil)
        try await withRunning([server, client]) {
            let peer = try await client.connect(to: server.loopbackEndpoint)
            for name in ["", String(repeating: "n", count: 1025)] {
                await #expect(throws: TransceiverError.self) {
                    try await client.sendRaw(typeName: name, payload: ByteBuffer(string: "{}"), to: peer.id)
                }
            }
            #expect(client.peers.count == 1)
        }
    }

    @Test("peer events report connect and disconnect, with the reason")
    func peerEvents() async throws {
        let server = makeTransceiver("server")
        let client = makeTransceiver("client", listen: nil)
        try await server.start()
        let events = server.peerEvents
        try await client.start()
        _ = try await client.connect(to: server.loopbackEndpoint)
        await client.stop()
        var iterator = events.makeAsyncIterator()
        guard case .connected(let peer) = await iterator.next() else { throw PeerProcessError("no connected event") }
        #expect(peer.name == "client")
        guard case .disconnected(let gone, let reason) = await iterator.next() else { throw PeerProcessError("no disconnected event") }
        #expect(gone.id == peer.id)
        guard case .peerSaidGoodbye(.goingAway, let message) = reason else {
            Issue.record("expected the client's goodbye, got \(reason)")
            return
        }
        #expect(message.contains("shutting down"))
        await server.stop()
        #expect(await iterator.next() == nil)
    }
}
