import Foundation
import NIOCore
@testable import Parley
import ParleyTestSupport
import ParleyWire
import Synchronization
import Testing

@Suite("Lifecycle and dead connections", .timeLimit(.minutes(2)))
struct LifecycleTests {
    @Test("stop() cancels a handler that is still busy after the grace period")
    func stopCancelsBusyHandler() async throws {
        let server = makeTransceiver("server") { $0.shutdownFlushTimeout = .milliseconds(200) }
        let client = makeTransceiver("client", listen: nil)
        let started = Counter()
        let cancelled = Counter()
        let never = Latch()
        server.receive(Echo.self) { _, _ in
            started.increment()
            do { try await never.wait() } catch { cancelled.increment() }
        }
        try await server.start()
        try await client.start()
        let peer = try await client.connect(to: server.loopbackEndpoint)
        try await client.send(Echo(text: "take your time"), to: peer)
        #expect(await eventually { started.count == 1 })
        let clock = ContinuousClock.now
        await server.stop()
        // Grace is 0.2 s + 1 s; far below the handler's 120 s.
        #expect(ContinuousClock.now - clock < .seconds(30))
        #expect(cancelled.count == 1)
        await client.stop()
    }

    @Test("calling run() on a running transceiver throws and leaves it serving")
    func runTwice() async throws {
        let server = makeTransceiver("server")
        let client = makeTransceiver("client", listen: nil)
        server.respond(to: Echo.self) { echo, _ in echo }
        try await withRunning([server, client]) {
            await #expect(throws: TransceiverError.self) { try await server.run() }
            let peer = try await client.connect(to: server.loopbackEndpoint)
            #expect(try await client.request(Echo(text: "still"), from: peer, expecting: Echo.self).text == "still")
        }
    }

    @Test("a connection reset while its handler is busy is reported at once, not when the handler returns")
    func resetDuringHandler() async throws {
        let server = makeTransceiver("server")
        let release = Latch()
        let handling = Latch()
        server.receiveRaw(typeName: "test.Block") { _, _ in
            handling.open()
            try await release.wait()
        }
        try await withRunning([server]) {
            let events = server.peerEvents
            let socket = try await RawConnection.open(port: server.listeningPort!)
            try await socket.write(rawHello())
            #expect(await eventually(peersOf: server) { $0.count == 1 })
            try await socket.write(.message(MessageFrame(header: MessageHeader(typeName: "test.Block", id: MessageID(1)), payload: ByteBuffer(string: "{}"))))
            try await handling.wait()
            try await socket.setAbortiveClose()
            let reset = ContinuousClock.now
            socket.close()
            // The handler stays blocked until `release` opens, and only this test opens it, after the wait below:
            // were the disconnect reported only once the handler returned, this wait would end in its deadline.
            let reason: DisconnectReason? = try await withDeadline(.seconds(10), what: "the disconnect while the handler is blocked") {
                for await event in events {
                    if case .disconnected(_, let why) = event { return why }
                }
                return nil
            }
            // The reset itself, not the node stopping.
            let why = try #require(reason, "the event stream ended without a disconnect")
            // A reset is a transport failure (ECONNRESET) or, when the kernel reports it as an end of file, a close.
            switch why {
            case .transportFailed(.io(let code, _)): #expect(code == ECONNRESET, "\(why)")
            case .peerClosed: break
            default: Issue.record("not the reset: \(why)")
            }
            #expect(ContinuousClock.now - reset < .seconds(5), "\(why)")
            #expect(server.peers.isEmpty)
            release.open()
        }
    }

    @Test("a connection in the original framing that sends a Parley frame is closed as a protocol violation")
    func originalFramingConnectionSendsParleyFrame() async throws {
        let server = makeTransceiver("server") { $0.originalFraming = OriginalFramingSupport(translator: VerbatimTranslator()) }
        let inbox = Inbox<String>()
        server.receiveRaw(typeName: VerbatimTranslator.inbound) { _, _ in inbox.put("original") }
        server.receiveRaw(typeName: "test.Sneaky") { _, _ in inbox.put("sneaky") }
        try await withRunning([server]) {
            let socket = try await RawConnection.open(port: server.listeningPort!)
            let json = #"{"action":"a","state":{}}"#
            try await socket.write([206] + withUnsafeBytes(of: Int32(json.utf8.count).littleEndian, Array.init) + Array(json.utf8))
            #expect(try await inbox.take() == ["original"])
            try await socket.write(.message(MessageFrame(header: MessageHeader(typeName: "test.Sneaky", id: MessageID(1)), payload: ByteBuffer(string: "{}"))))
            let (bytes, closed) = try await socket.bytes()
            #expect(closed && bytes.isEmpty)  // closed, and not sent a Parley frame it would not understand
            #expect(server.statistics.protocolErrors == 1)
        }
    }
}
