import Foundation
import Parley
import ParleyControl
import ParleyRemoteDebugger
import ParleyTelemetry
import ParleyTestSupport
import Testing

/// The Swift debugger client sending only to debuggers it paired with: real parleyd processes on loopback, a
/// person as `parleyctl pair accept`, the app's device identity in a directory of the test's own.
@Suite("Remote debugger: paired debuggers", .serialized, .timeLimit(.minutes(3)))
struct PairedDebuggerTests {
    struct AppState: Codable, Sendable, Equatable {
        var count: Int
    }

    static func client(_ daemon: ParleydProcess, directory: ScratchDirectory, logs: LogCapture? = nil) -> RemoteDebugger<AppState, String> {
        // The trust left as it comes: paired debuggers only.
        var configuration = RemoteDebuggerConfiguration<String>(appName: "paired-app", debugger: .endpoint(host: "127.0.0.1", port: daemon.port))
        configuration.deviceDirectory = directory.path
        if let logs { configuration.logger = logs.logger }
        return RemoteDebugger(configuration: configuration)
    }

    static func status(_ daemon: ParleydProcess) async throws -> Control.StatusReport {
        try JSONDecoder().decode(Control.StatusReport.self, from: Data(try await daemon.ctl(["status", "--json"]).stdout.utf8))
    }

    static func sessions(_ daemon: ParleydProcess) async throws -> [[String: Any]] {
        let result = try await daemon.ctl(["sessions", "--json"])
        #expect(result.status == 0, "\(result)")
        // One JSON object per line.
        return result.stdout.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    @Test("an app asks parleyd to pair and sends nothing until a person accepts; then its states arrive; after a restart it goes straight in, and another parleyd gets no byte of state")
    func pairThenSend() async throws {
        let directory = try ScratchDirectory(prefix: "paired-app")
        let daemon = try await ParleydProcess.start(staticPeer: nil)
        let first = Self.client(daemon, directory: directory)
        try first.start()
        first.write(action: "before pairing", state: AppState(count: 1), snapshot: nil)

        let request = try await daemon.waitForLine(containing: "a device asks to pair")
        let identity = try DeviceIdentity.loadOrCreate(in: directory.path, name: "paired-app")
        #expect(request.contains(identity.fingerprint.short) && request.contains("paired-app"), "\(request)")
        #expect(try await Self.sessions(daemon).isEmpty, "nothing is recorded before the pairing is accepted")

        #expect(try await daemon.ctl(["pair", "accept", identity.fingerprint.short]).status == 0)
        // The queued record goes out once the app's next connection gets in.
        let entries = try await DebuggerTests.waitForHistory(daemon, count: 1)
        #expect(entries.first?["action"] as? String == "before pairing")
        await first.stop()

        // Pinned: the next run goes straight in with the same identity.
        let again = Self.client(daemon, directory: directory)
        try again.start()
        again.write(action: "after restart", state: AppState(count: 2), snapshot: nil)
        let both = try await DebuggerTests.waitForHistory(daemon, count: 2)
        #expect(both.last?["action"] as? String == "after restart")
        await again.stop()
        #expect(daemon.logLines(containing: "a device asks to pair").count == 1, "\(daemon.log)")

        // Another parleyd: the app refuses it in the TLS handshake, before its hello. No request, no session.
        let stranger = try await ParleydProcess.start(name: "stranger")
        let logs = LogCapture()
        let elsewhere = Self.client(stranger, directory: directory, logs: logs)
        try elsewhere.start()
        elsewhere.write(action: "secret state", state: AppState(count: 3), snapshot: nil)
        let strangerDevice = try #require(try await Self.status(stranger).fingerprint.flatMap(DeviceFingerprint.init))
        #expect(await logs.logged(mentioning: "the device with fingerprint \(strangerDevice.short) is not trusted here"))
        #expect(try await Self.sessions(stranger).isEmpty)
        #expect(stranger.logLines(containing: "a device asks to pair").isEmpty && !stranger.log.contains("secret state"))
        await elsewhere.stop()
        #expect(try await stranger.stop() == 0)
        #expect(try await daemon.stop() == 0)
    }

    @Test("what an app sends to is paired debuggers unless it says otherwise (any debugger only on the original framing, which cannot tell them apart); its telemetry exporter shares the app's identity, so one pairing lets both in")
    func pairedByDefault() async throws {
        #expect(RemoteDebuggerConfiguration<String>(appName: "app", debugger: .endpoint(host: "127.0.0.1", port: 1)).trust == .paired)
        #expect(RemoteDebuggerConfiguration<String>(appName: "app", debugger: .endpoint(host: "127.0.0.1", port: 1), wireProtocol: .originalFraming).trust == .anyOpen)
        #expect(TelemetryExporterConfiguration(appName: "app", debugger: .endpoint(host: "127.0.0.1", port: 1)).trust == .paired)

        let directory = try ScratchDirectory(prefix: "paired-exporter")
        let daemon = try await ParleydProcess.start(staticPeer: nil)
        let watcher = try await TelemetryWatcher.start(on: daemon)
        var configuration = TelemetryExporterConfiguration(appName: "paired-app", debugger: .endpoint(host: "127.0.0.1", port: daemon.port))
        configuration.deviceDirectory = directory.path
        let exporter = TelemetryExporter(configuration: configuration)
        try exporter.start()
        exporter.enqueue(LogRecord(time: .now, severity: .notice, label: "app", message: "logged before pairing"))

        // The debugger client of the same app asks to pair; accepting it lets the exporter in too.
        let debugger = Self.client(daemon, directory: directory)
        try debugger.start()
        _ = try await daemon.waitForLine(containing: "a device asks to pair")
        #expect(try await watcher.logs().isEmpty, "nothing is stored before the pairing is accepted")
        let identity = try DeviceIdentity.loadOrCreate(in: directory.path, name: "paired-app")
        #expect(try await daemon.ctl(["pair", "accept", identity.fingerprint.short]).status == 0)
        let stored = try await watcher.waitFor(message: "logged before pairing")
        #expect(stored.record.label == "app")

        await exporter.stop()
        await debugger.stop()
        await watcher.transceiver.stop()
        #expect(try await daemon.stop() == 0)
    }
}
