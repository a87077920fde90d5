import Foundation
import ParleyRemoteDebugger
import ParleyTestSupport
import Testing

/// The client in the original Swift Talk framing, against a raw TCP server that reads and writes 206 frames by hand.
@Suite("Remote debugger client, original framing")
struct RemoteDebuggerOriginalFramingTests {
    /// The JSON object of a 206 frame, as a dictionary.
    func object(_ body: Data) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: body) as? [String: Any])
    }

    @Test("a record is a 206 frame of state, action and base64 imageData; a 206 frame sent back reaches onRestore")
    func recordAndRestore() async throws {
        let listener = try await RawConnection.Listener.open()
        let client = makeClient(port: listener.port, wireProtocol: .originalFraming)
        let restored = Inbox<CounterState>()
        client.onRestore { restored.put($0) }
        try client.start()

        client.write(action: .mouseMoved(x: 1, y: 2), state: sampleState(3), snapshot: samplePNG)
        let connection = try await listener.accept()
        let frame = try await connection.readOriginalFrame()
        #expect(frame.start == 206)
        let json = try object(frame.body)
        #expect(Set(json.keys) == ["state", "action", "imageData"])
        #expect(json["action"] as? String == "mouseMoved(x: 1, y: 2)")
        #expect(json["imageData"] as? String == samplePNG.base64EncodedString())
        let state = try JSONSerialization.data(withJSONObject: try #require(json["state"]))
        #expect(try JSONDecoder().decode(CounterState.self, from: state) == sampleState(3))

        // Time travel: the bare state JSON in a 206 frame.
        try await connection.writeOriginalFrame(try JSONEncoder().encode(sampleState(99)))
        #expect(try await restored.next() == sampleState(99))
        #expect(client.statistics.restored == 1)
        await client.stop()
    }

    @Test("with discovery, the client browses through the backend the app passes and dials the service it finds")
    func discoversThroughTheGivenBackend() async throws {
        let listener = try await RawConnection.Listener.open()
        let discovery = DebuggerDiscovery(port: listener.port)
        let location = DebuggerLocation.discover(backend: discovery.factory, serviceType: "_parley-debug._tcp")
        let client = makeClient(port: listener.port, location: location, wireProtocol: .originalFraming)
        try client.start()

        client.write(action: .reset, state: sampleState(5))
        let frame = try await listener.accept().readOriginalFrame()
        #expect(try object(frame.body)["action"] as? String == "reset")
        #expect(discovery.browsed == ["_parley-debug._tcp"])
        await client.stop()
    }

    @Test("the client dials when it has a record, reconnects after the debugger drops it; no screenshot is empty imageData")
    func reconnectsAndSendsWithoutScreenshot() async throws {
        let listener = try await RawConnection.Listener.open()
        let client = makeClient(port: listener.port, wireProtocol: .originalFraming, filter: .allExcept(.noisy))
        try client.start()
        // Nothing to send, so nothing dials: a silent connection would look like any stalled peer to a debugger.
        await #expect(throws: TestTimeout.self) { _ = try await listener.accept(timeout: .seconds(1)) }

        client.write(action: .increment, state: sampleState(1), snapshot: samplePNG)
        let first = try await listener.accept()
        #expect(try object(try await first.readOriginalFrame().body)["action"] as? String == "increment")
        first.close()
        #expect(await eventually { !client.isConnected })

        client.write(action: .tick(1), state: sampleState(2))
        client.write(action: .reset, state: sampleState(3))
        let second = try await listener.accept()
        let json = try object(try await second.readOriginalFrame().body)
        #expect(json["action"] as? String == "reset")
        #expect(json["imageData"] as? String == "")
        #expect(client.filteredCount == 1)
        await client.stop()
    }

    @Test("stop() sends what is still queued before it closes the connection")
    func stopFlushesQueue() async throws {
        let listener = try await RawConnection.Listener.open()
        let client = makeClient(port: listener.port, wireProtocol: .originalFraming, queueCapacity: 64)
        try client.start()
        client.write(action: .increment, state: sampleState(0))
        let connection = try await listener.accept()
        _ = try await connection.readOriginalFrame()
        #expect(await eventually { client.isConnected })

        for n in 1...20 { client.write(action: .tick(n), state: sampleState(n), snapshot: samplePNG) }
        await client.stop()

        var actions: [String] = []
        for _ in 1...20 { actions.append(try object(try await connection.readOriginalFrame().body)["action"] as? String ?? "?") }
        #expect(actions == (1...20).map { "tick(\($0))" })
        #expect(client.statistics.sent == 21)
    }
}

@Suite("Remote debugger client, stalled debugger")
struct RemoteDebuggerStalledTests {
    @Test("stop() returns after the flush timeout when the debugger stops reading, and every record is accounted for")
    func stopWithStalledDebugger() async throws {
        let listener = try await RawConnection.Listener.open(reading: false)
        let client = makeClient(port: listener.port, wireProtocol: .originalFraming, flushTimeout: .milliseconds(500))
        try client.start()

        // Never read: a few records of 4 MB fill both socket buffers and the client's write waits.
        var big = sampleState(0)
        big.tags = [String(repeating: "x", count: 4 << 20)]
        for n in 0..<6 { client.write(action: .tick(n), state: big) }
        let connection = try await listener.accept()
        #expect(await eventually { client.isConnected })
        try await withDeadline(.seconds(60), what: "stop() with a stalled debugger") { await client.stop() }

        let statistics = client.statistics
        #expect(statistics.sent + statistics.failed + statistics.dropped == 6)
        #expect(statistics.dropped + statistics.failed > 0)
        #expect(client.pendingCount == 0)
        _ = connection
    }
}
