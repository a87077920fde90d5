import Foundation
import NIOCore
import Parley
import ParleyDebugger
import ParleyTelemetry

/// An app connected to parleyd over TCP, sending `parley.telemetry.Batch` messages as the tests choose them.
public struct TelemetryApp: Sendable {
    public let transceiver: Transceiver
    public let parleyd: Peer

    public static func connect(_ name: String, to daemon: ParleydProcess) async throws -> TelemetryApp {
        let transceiver = Transceiver(configuration: TransceiverConfiguration(name: name, identity: .ephemeral, listenHost: nil))
        try await transceiver.start()
        return TelemetryApp(transceiver: transceiver, parleyd: try await transceiver.connect(to: daemon.endpoint))
    }

    public func send(_ batch: TelemetryBatch) async throws {
        try await send(ByteBuffer(bytes: try JSONEncoder().encode(batch)))
    }

    /// Any payload, well formed or not.
    public func send(_ payload: ByteBuffer) async throws {
        try await transceiver.sendRaw(typeName: TelemetryBatch.messageType, payload: payload, to: parleyd.id)
    }
}

/// A local client of parleyd (its control socket) following every log record it stores.
public struct TelemetryWatcher: Sendable {
    public let transceiver: Transceiver
    public let parleyd: Peer
    public let appended: Inbox<StoredLogRecord>

    public static func start(on daemon: ParleydProcess, query: LogQuery = LogQuery()) async throws -> TelemetryWatcher {
        let transceiver = Transceiver(configuration: TransceiverConfiguration(name: "watcher", identity: .ephemeral, listenHost: nil, port: 0))
        let appended = Inbox<StoredLogRecord>()
        transceiver.receive(TelemetryControl.LogAppended.self) { message, _ in appended.put(message.record) }
        try await transceiver.start()
        let parleyd = try await transceiver.connect(toUnixSocket: daemon.controlSocket)
        let watcher = TelemetryWatcher(transceiver: transceiver, parleyd: parleyd, appended: appended)
        _ = try await watcher.ask(TelemetryControl.FollowLogs(query: query), TelemetryControl.FollowingLogs.self)
        return watcher
    }

    public func ask<Request: Encodable & Sendable, Reply: Decodable & Sendable>(_ request: Request, _ reply: Reply.Type) async throws -> Reply {
        try await transceiver.request(request, from: parleyd, expecting: reply)
    }

    /// Waits until a stored record whose message is `message` has been pushed; returns it.
    public func waitFor(message: String) async throws -> StoredLogRecord {
        try await waitFor(messages: [message])[message]!
    }

    /// Waits until a stored record has been pushed for each of `messages`, in any order: records sent on different
    /// connections are stored in no set order between them. Returns them by message.
    public func waitFor(messages: Set<String>) async throws -> [String: StoredLogRecord] {
        var found: [String: StoredLogRecord] = [:]
        while found.count < messages.count {
            let next = try await appended.next()
            if messages.contains(next.record.message) { found[next.record.message] = next }
        }
        return found
    }

    public func logs(_ query: LogQuery = LogQuery()) async throws -> [StoredLogRecord] {
        try await ask(TelemetryControl.Logs(query: query), TelemetryControl.LogPage.self).page.items
    }

    /// A record that says where a test is: waiting for it means everything sent before it was stored.
    public static func marker(_ text: String) -> LogRecord { LogRecord(time: .now, severity: .notice, label: "test", message: text) }
}

extension ParleydProcess {
    /// Waits for the `count`th line of parleyd's log that contains `text`; returns it.
    public func logLine(containing text: String, count: Int) async throws -> String {
        try await child.waitFor(in: \.stderr, timeout: .seconds(30)) { log in
            let lines = log.split(separator: "\n").filter { $0.contains(text) }
            return lines.count >= count ? String(lines[count - 1]) : nil
        }
    }
}
