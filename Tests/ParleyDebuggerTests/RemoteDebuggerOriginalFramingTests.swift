import Foundation
import ParleyRemoteDebugger
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
        let listener = try RawFramingListener()
        let client = makeClient(port: listener.port, wireProtocol: .originalFraming)
        let restored = Inbox<CounterState>()
        client.onRestore { restored.put($0) }
        try client.start()
        let connection = try await listener.accept()

        client.write(action: .mouseMoved(x: 1, y: 2), state: sampleState(3), snapshot: samplePNG)
        let frame = try await connection.readFrame()
        #expect(frame.start == 206)
        let json = try object(frame.body)
        #expect(Set(json.keys) == ["state", "action", "imageData"])
        #expect(json["action"] as? String == "mouseMoved(x: 1, y: 2)")
        #expect(json["imageData"] as? String == samplePNG.base64EncodedString())
        let state = try JSONSerialization.data(withJSONObject: try #require(json["state"]))
        #expect(try JSONDecoder().decode(CounterState.self, from: state) == sampleState(3))

        // Time travel: the bare state JSON in a 206 frame.
        try await connection.writeFrame(try JSONEncoder().encode(sampleState(99)))
        #expect(try await restored.next() == sampleState(99))
        #expect(client.statistics.restored == 1)
        await client.stop()
    }

    @Test("after the debugger drops the connection the client reconnects; a record without screenshot has empty imageData")
    func reconnectsAndSendsWithoutScreenshot() async throws {
        let listener = try RawFramingListener()
        let client = makeClient(port: listener.port, wireProtocol: .originalFraming, filter: .allExcept(.noisy))
        try client.start()
        let first = try await listener.accept()
        client.write(action: .increment, state: sampleState(1), snapshot: samplePNG)
        #expect(try object(try await first.readFrame().body)["action"] as? String == "increment")
        first.shutdown()
        #expect(await eventually { !client.isConnected })

        let second = try await listener.accept()
        client.write(action: .tick(1), state: sampleState(2))
        client.write(action: .reset, state: sampleState(3))
        let json = try object(try await second.readFrame().body)
        #expect(json["action"] as? String == "reset")
        #expect(json["imageData"] as? String == "")
        #expect(client.filteredCount == 1)
        await client.stop()
    }
}
