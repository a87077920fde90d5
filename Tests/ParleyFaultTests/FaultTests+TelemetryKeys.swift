import Foundation
import NIOCore
import ParleyDebugger
import ParleyTelemetry
import ParleyTestSupport
import Testing

extension FaultTests {
    /// The costliest hostile batch an app can send within the 8 MiB limit: 200 000 metadata keys in one record.
    /// With the load tests, run alone, because decoding it in a debug build takes seconds of a core.
    @Test("a record with 200 000 metadata keys is cut to 128, the rest counted and said in the log; the app stays heard")
    func telemetryManyKeys() async throws {
        let daemon = try await ParleydProcess.start(name: "faultd")
        let watcher = try await TelemetryWatcher.start(on: daemon)
        let app = try await TelemetryApp.connect("hostile", to: daemon)
        var keys = ByteBuffer(string: #"{"logs":[{"timeUnixNano":7,"severity":"warning","message":"many keys","metadata":{"#)
        for index in 0..<200_000 { keys.writeString((index == 0 ? "" : ",") + "\"k\(String(format: "%07d", index))\":\(index)") }
        keys.writeString("}}]}")
        #expect(keys.readableBytes < 8 << 20)
        let start = ContinuousClock.now
        try await app.send(keys)
        let manyKeys = try await watcher.waitFor(message: "many keys")
        print("[fault] 200 000 metadata keys: stored, cut to 128, after \(ContinuousClock.now - start)")
        #expect(manyKeys.record.metadata.count == 128 && manyKeys.record.droppedMetadata == 199_872)
        let cutLine = try await daemon.logLine(containing: "telemetry records cut to the limits", count: 1)
        #expect(cutLine.contains("items-dropped=199872") && cutLine.contains("hostile"), "\(cutLine)")
        try await app.send(TelemetryBatch(logs: [TelemetryWatcher.marker("still heard")]))
        _ = try await watcher.waitFor(message: "still heard")
        await app.transceiver.stop()
        await watcher.transceiver.stop()
        #expect(try await daemon.stop() == 0)
    }
}
