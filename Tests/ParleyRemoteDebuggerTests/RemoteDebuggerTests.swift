import Foundation
import NIOCore
import Parley
import ParleyDebugger
import ParleyRemoteDebugger
import ParleyTestSupport
import Synchronization
import Testing

/// The client on Parley's typed protocol, against an in-process transceiver acting as the debugger on 127.0.0.1.
@Suite("Remote debugger client, typed protocol")
struct RemoteDebuggerTests {
    @Test("a record arrives with its action, state and screenshot bytes intact, the screenshot as binary")
    func recordArrivesIntact() async throws {
        let debugger = try await TestDebugger.start()
        let client = makeClient(port: debugger.port)
        try client.start()

        client.write(action: .mouseMoved(x: 3, y: -4), state: sampleState(7), snapshot: samplePNG)
        let arrival = try await debugger.arrivals.next()

        #expect(arrival.peer.name == "counter-app")
        #expect(arrival.record.action == "mouseMoved(x: 3, y: -4)")
        #expect(try arrival.record.decodedState() == sampleState(7))
        #expect(Data(arrival.record.screenshot.readableBytesView) == samplePNG)
        // Exactly the binary layout: two lengths, the action, the state JSON and the raw PNG; base64 would add a third.
        #expect(arrival.payloadSize == 8 + arrival.record.action.utf8.count + arrival.record.state.readableBytes + samplePNG.count)
        #expect(client.statistics.sent == 1)
        await client.stop()
        await debugger.stop()
    }

    @Test("a record without a screenshot arrives with an empty one")
    func noScreenshot() async throws {
        let debugger = try await TestDebugger.start()
        let client = makeClient(port: debugger.port)
        try client.start()
        client.write(action: .increment, state: sampleState(1))
        let record = try await debugger.records(1, sentBy: client)[0]
        #expect(record.action == "increment")
        #expect(record.screenshot.readableBytes == 0)
        await client.stop()
        await debugger.stop()
    }

    @Test("a state the debugger sends back reaches onRestore decoded; one that does not decode is counted and skipped")
    func restore() async throws {
        let debugger = try await TestDebugger.start()
        let client = makeClient(port: debugger.port)
        let restored = Inbox<CounterState>()
        client.onRestore { restored.put($0) }
        try client.start()

        let app = try await debugger.waitForApp()
        #expect(app.accepts.contains(StateRestore.messageType))
        try await debugger.transceiver.sendRaw(
            typeName: StateRestore.messageType, payload: ByteBuffer(string: #"{"count":"not a number"}"#), to: app.id
        )
        try await debugger.transceiver.sendRaw(
            typeName: StateRestore.messageType, payload: ByteBuffer(bytes: try JSONEncoder().encode(sampleState(42))),
            to: app.id
        )

        #expect(try await restored.next() == sampleState(42))
        #expect(client.statistics.restoreFailures == 1)
        #expect(client.statistics.restored == 1)
        await client.stop()
        await debugger.stop()
    }

    @Test("filtered actions are never sent while the others arrive in order")
    func filteredActionsNeverArrive() async throws {
        let debugger = try await TestDebugger.start()
        let client = makeClient(port: debugger.port, filter: .allExcept(.noisy))
        try client.start()

        client.write(action: .tick(1), state: sampleState(1))
        client.write(action: .increment, state: sampleState(2))
        client.write(action: .mouseMoved(x: 1, y: 1), state: sampleState(3))
        client.write(action: .tick(2), state: sampleState(4))
        client.write(action: .reset, state: sampleState(5))

        // `.reset` was written last and records arrive in order: had a noisy one been sent, it would be among these.
        let records = try await debugger.records(2, sentBy: client)
        #expect(records.map(\.action) == ["increment", "reset"])
        #expect(try records.map { try $0.decodedState().count } == [2, 5])
        #expect(client.filteredCount == 3)
        #expect(client.statistics.sent == 2)
        await client.stop()
        await debugger.stop()
    }

    @Test("with the debugger unreachable the queue keeps the newest records and counts drops, and write returns at once")
    func unreachableDebuggerKeepsNewest() async throws {
        let port = try unusedPort()
        let client = makeClient(port: port, queueCapacity: 4)
        try client.start()

        let clock = ContinuousClock()
        let elapsed = clock.measure {
            for n in 0..<10 { client.write(action: .tick(n), state: sampleState(n), snapshot: samplePNG) }
        }
        // Synchronous calls, done before anything could be sent: they cannot have waited for the network.
        #expect(client.pendingCount == 4)
        #expect(client.droppedCount == 6)
        print("[bench] RemoteDebugger.write, debugger unreachable: \(elapsed / 10) per call")

        // The debugger appears: exactly the four newest arrive, oldest first.
        let debugger = try await TestDebugger.start(port: port)
        let records = try await debugger.records(4, sentBy: client)
        #expect(records.map(\.action) == ["tick(6)", "tick(7)", "tick(8)", "tick(9)"])
        #expect(await eventually { client.pendingCount == 0 })
        #expect(client.statistics.sent == 4)
        await client.stop()
        await debugger.stop()
    }

    @Test("the client reconnects after the debugger stops and starts again on the same port")
    func reconnectsAfterDebuggerRestart() async throws {
        let first = try await TestDebugger.start(port: try unusedPort())
        let port = first.port
        let client = makeClient(port: port)
        try client.start()
        client.write(action: .increment, state: sampleState(1))
        #expect(try await first.records(1).map(\.action) == ["increment"])

        await first.stop()
        #expect(await eventually { !client.isConnected })
        client.write(action: .reset, state: sampleState(2))

        let second = try await TestDebugger.start(port: port)
        let record = try await second.records(1)[0]
        #expect(record.action == "reset")
        #expect(try record.decodedState() == sampleState(2))
        client.write(action: .tick(3), state: sampleState(3))
        #expect(try await second.records(1).map(\.action) == ["tick(3)"])
        await client.stop()
        await second.stop()
    }

    @Test("stop() sends what is still queued to a connected debugger, then later writes are dropped")
    func stopFlushesQueue() async throws {
        let debugger = try await TestDebugger.start()
        let client = makeClient(port: debugger.port, queueCapacity: 64)
        try client.start()
        #expect(await eventually { client.isConnected })

        for n in 0..<20 { client.write(action: .tick(n), state: sampleState(n), snapshot: samplePNG) }
        await client.stop()

        let records = try await debugger.records(20, sentBy: client)
        #expect(records.map(\.action) == (0..<20).map { "tick(\($0))" })
        client.write(action: .reset, state: sampleState(0))
        #expect(client.droppedCount == 1)
        #expect(await eventually(peersOf: debugger.transceiver) { $0.isEmpty })
        await debugger.stop()
    }

    @Test("records go only to peers whose hello accepts parley.debugger.record")
    func onlyPeersAcceptingRecords() async throws {
        let other = Transceiver(
            configuration: TransceiverConfiguration(
                name: "not-a-debugger", identity: .ephemeral, listenHost: "127.0.0.1", port: 0, logger: quietLogger
            )
        )
        let received = Mutex<[String]>([])
        other.receiveUnhandled { message, _ in received.withLock { $0.append(message.typeName) } }
        try await other.start()
        let client = makeClient(port: other.listeningPort!)
        let restored = Inbox<CounterState>()
        client.onRestore { restored.put($0) }
        try client.start()
        let app = try await other.waitForPeer(timeout: .seconds(30), description: "the app") { $0.name == "counter-app" }
        // A message reaches the app only after the peer's hello: once it has, the app knows what the peer accepts.
        try await other.sendRaw(
            typeName: StateRestore.messageType, payload: ByteBuffer(bytes: try JSONEncoder().encode(sampleState(0))),
            to: app.id
        )
        _ = try await restored.next()
        #expect(!client.isConnected)

        for n in 0..<3 { client.write(action: .tick(n), state: sampleState(n)) }
        // stop() sends what it can: to a peer that accepts no records, nothing.
        await client.stop()
        #expect(client.statistics.sent == 0)
        #expect(client.droppedCount == 3)
        await other.stop()
        #expect(received.withLock { $0 } == [])
    }

    @Test("run() is structured: cancelling its task disconnects from the debugger and returns")
    func runEndsOnCancellation() async throws {
        let debugger = try await TestDebugger.start()
        let client = makeClient(port: debugger.port)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await client.run() }
            _ = try await debugger.waitForApp()
            client.write(action: .increment, state: sampleState(1))
            #expect(try await debugger.records(1, sentBy: client).map(\.action) == ["increment"])
            group.cancelAll()
            try await group.waitForAll()
        }
        #expect(await eventually(peersOf: debugger.transceiver) { $0.isEmpty })
        #expect(!client.isConnected)
        #expect(throws: RemoteDebuggerError.alreadyStarted) { try client.start() }
        await debugger.stop()
    }

    @Test("run() returns when stop() is called from elsewhere, and stop() returns once run() has")
    func runEndsOnStop() async throws {
        let debugger = try await TestDebugger.start()
        let client = makeClient(port: debugger.port)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await client.run() }
            #expect(await eventually { client.isConnected })
            client.write(action: .reset, state: sampleState(1))
            await client.stop()
            try await group.waitForAll()
        }
        #expect(try await debugger.records(1, sentBy: client).map(\.action) == ["reset"])
        #expect(await eventually(peersOf: debugger.transceiver) { $0.isEmpty })
        await debugger.stop()
    }

    @Test("an invalid configuration is refused by start() with an error that says what to change, before discovery starts")
    func invalidConfiguration() {
        let client = makeClient(port: 1, queueCapacity: 0)
        #expect(throws: RemoteDebuggerError.invalidQueueCapacity(0)) { try client.start() }

        let discovery = DebuggerDiscovery(port: 1)
        let badType = makeClient(port: 1, location: .discover(backend: discovery.factory, serviceType: "debug"))
        #expect {
            try badType.start()
        } throws: { error in
            guard case .invalidServiceType("debug", _) = error as? RemoteDebuggerError else { return false }
            return "\(error)".contains("'debug'")
        }
        #expect(discovery.made == 0)

        var pairedOriginal = RemoteDebuggerConfiguration<CounterAction>(
            appName: "counter-app", debugger: .endpoint(host: "127.0.0.1", port: 1), wireProtocol: .originalFraming)
        pairedOriginal.trust = .named("alice-laptop")
        let refused = RemoteDebugger<CounterState, CounterAction>(configuration: pairedOriginal)
        #expect(throws: RemoteDebuggerError.trustNeedsParleyProtocol(.named("alice-laptop"))) { try refused.start() }
        #expect("\(RemoteDebuggerError.trustNeedsParleyProtocol(.paired))".contains("original framing"))
    }

    @Test("with discovery, the client browses through the backend the app passes and sends to the debugger it finds")
    func discoversThroughTheGivenBackend() async throws {
        let debugger = try await TestDebugger.start()
        let discovery = DebuggerDiscovery(port: debugger.port, peerID: try #require(debugger.transceiver.localPeerID).rawValue)
        let client = makeClient(port: debugger.port, location: .discover(backend: discovery.factory))
        try client.start()

        client.write(action: .increment, state: sampleState(1))
        #expect(try await debugger.records(1, sentBy: client).map(\.action) == ["increment"])
        #expect(discovery.browsed == ["_debug._tcp"])
        await client.stop()
        await debugger.stop()
    }
}

@Suite("Remote debugger client, write cost")
struct RemoteDebuggerWriteCostTests {
    @Test("write() of a 5 MB state with the debugger away keeps the newest N and counts the rest as dropped (prints the cost)")
    func writeCostWithLargeState() async throws {
        let port = try unusedPort()
        let client = makeClient(port: port, queueCapacity: 16)
        try client.start()
        var state = sampleState(0)
        state.tags = (0..<50_000).map { String(repeating: "t", count: 100 + $0 % 7) }  // about 5 MB of text
        let calls = 20_000
        let elapsed = ContinuousClock().measure {
            for n in 0..<calls { client.write(action: .tick(n), state: state, snapshot: samplePNG) }
        }
        #expect(client.pendingCount == 16)
        #expect(client.droppedCount == calls - 16)
        print("[bench] RemoteDebugger.write, 5 MB state, debugger unreachable: \(elapsed / calls) per call over \(calls) calls")
        await client.stop()
        #expect(client.droppedCount == calls)
    }
}
