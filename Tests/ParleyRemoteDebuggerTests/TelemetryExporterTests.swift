import Foundation
import NIOCore
import Parley
import ParleyDebugger
import ParleyRemoteDebugger
import ParleyTelemetry
import ParleyTestSupport
import Testing

/// The exporter's queue without a network, and its batches against an in-process stand-in for parleyd on
/// 127.0.0.1 (a transceiver that accepts `parley.telemetry.Batch`).
@Suite("Telemetry exporter")
struct TelemetryExporterTests {
    @Test("the queue keeps the newest records and counts the ones it pushes out")
    func queueKeepsNewest() {
        let exporter = TelemetryExporter(configuration: .init(appName: "app", destination: .debugger(.endpoint(host: "127.0.0.1", port: 9)), queueCapacity: 3, trust: .anyOpen))
        for number in 1...5 { exporter.enqueue(line(number)) }
        #expect(exporter.queuedItems == [3, 4, 5].map { .log(line($0)) })
        #expect(exporter.droppedCount == 2)
        #expect(exporter.pendingCount == 3)
    }

    @Test("with no debugger reachable, records queue up to the capacity and every one past it is counted as dropped")
    func noDebuggerNeverBlocks() async throws {
        let exporter = TelemetryExporter(configuration: unreachableConfiguration(queueCapacity: 100))
        try exporter.start()
        for number in 1...5_000 { exporter.enqueue(line(number)) }
        #expect(exporter.droppedCount == 4_900)
        #expect(exporter.queuedItems.first == .log(line(4_901)))
        #expect(exporter.statistics.sent == 0)
        await exporter.stop()
        // What was still queued when it stopped is dropped too; so is what comes after.
        exporter.enqueue(line(5_001))
        #expect(exporter.droppedCount == 5_001)
        #expect(exporter.pendingCount == 0)
    }

    @Test("an exporter that never ran drops what it held when stopped, and what comes after")
    func stopWithoutRunning() async {
        let exporter = TelemetryExporter(configuration: unreachableConfiguration(queueCapacity: 10))
        exporter.enqueue(line(1))
        await exporter.stop()
        exporter.enqueue(line(2))
        #expect(exporter.droppedCount == 2)
        #expect(throws: TelemetryExporterError.alreadyStarted) { try exporter.start() }
    }

    @Test("an invalid setting is refused at start, naming it")
    func invalidSettings() {
        var configuration = unreachableConfiguration(queueCapacity: 0)
        #expect(throws: TelemetryExporterError.invalidSetting("queueCapacity", "0", "it must be at least 1")) {
            try TelemetryExporter(configuration: configuration).start()
        }
        configuration.queueCapacity = 10
        configuration.maximumBatchRecords = 5_000
        #expect(throws: TelemetryExporterError.invalidSetting("maximumBatchRecords", "5000", "it must be from 1 to 4096, parleyd's limit")) {
            try TelemetryExporter(configuration: configuration).start()
        }
    }

    @Test("queued log lines and spans reach the debugger in batches of at most maximumBatchRecords, in order, and are counted as sent")
    func batchesArrive() async throws {
        let sink = try await TelemetrySink.start()
        var configuration = TelemetryExporterConfiguration(appName: "telemetry-app", destination: .debugger(.endpoint(host: "127.0.0.1", port: sink.port)), trust: .anyOpen)
        configuration.identity = .ephemeral
        configuration.maximumBatchRecords = 100
        configuration.logger = quietLogger
        let exporter = TelemetryExporter(configuration: configuration)
        for number in 1...250 { exporter.enqueue(line(number)) }
        exporter.enqueue(span("after the lines"))
        try exporter.start()

        let batches = try await sink.batches(totalling: 251)
        #expect(batches.allSatisfy { $0.batch.count <= 100 })
        #expect(batches.flatMap(\.batch.logs) == (1...250).map { line($0) })
        #expect(batches.flatMap(\.batch.spans).map(\.name) == ["after the lines"])
        #expect(batches.allSatisfy { $0.peer.name == "telemetry-app" })
        await exporter.stop()
        #expect(exporter.statistics.sent == 251)
        #expect(exporter.statistics.dropped == 0)
        await sink.stop()
    }

    @Test("a batch whose JSON is larger than maximumBatchBytes goes in smaller batches; every record arrives once")
    func largeBatchesSplit() async throws {
        let sink = try await TelemetrySink.start()
        var configuration = TelemetryExporterConfiguration(appName: "telemetry-app", destination: .debugger(.endpoint(host: "127.0.0.1", port: sink.port)), trust: .anyOpen)
        configuration.identity = .ephemeral
        configuration.maximumBatchBytes = 1024
        configuration.logger = quietLogger
        let exporter = TelemetryExporter(configuration: configuration)
        let records = (1...40).map { LogRecord(time: UnixNanos(UInt64($0)), severity: .info, label: "app", message: String(repeating: "x", count: 100) + "\($0)") }
        for record in records { exporter.enqueue(record) }
        try exporter.start()

        let batches = try await sink.batches(totalling: 40)
        #expect(batches.count > 1)
        #expect(batches.allSatisfy { $0.bytes <= 1024 })
        #expect(batches.flatMap(\.batch.logs).sorted { $0.time < $1.time } == records)
        await exporter.stop()
        await sink.stop()
    }

    @Test("a record is cut to the limits before it leaves the app")
    func limitsApplied() async throws {
        let sink = try await TelemetrySink.start()
        let exporter = TelemetryExporter(configuration: sinkConfiguration(sink))
        exporter.enqueue(LogRecord(time: UnixNanos(1), severity: .error, label: "app", message: String(repeating: "é", count: 40_000)))
        try exporter.start()
        let record = try #require(try await sink.batches(totalling: 1).first?.batch.logs.first)
        #expect(record.message.utf8.count <= TelemetryLimits.default.maximumMessageBytes)
        #expect(record.message.hasSuffix("…"))
        await exporter.stop()
        await sink.stop()
    }

    @Test("a record leaves redacted as it was queued: a log record's metadata, a span's attributes, events and links")
    func redactedOnTheWayOut() async throws {
        let sink = try await TelemetrySink.start()
        let exporter = TelemetryExporter(configuration: sinkConfiguration(sink))
        let secret: TelemetryAttributes = ["password": .string("hunter2"), "user": .string("ana")]
        let redacted: TelemetryAttributes = ["password": SecretRedaction.replacement, "user": .string("ana")]
        exporter.enqueue(LogRecord(time: UnixNanos(1), severity: .info, label: "app", message: "login", metadata: secret), redacting: SecretRedaction())
        var traced = span("GET /me")
        traced.attributes = secret
        traced.events = [SpanRecord.Event(name: "retry", time: UnixNanos(1), attributes: secret)]
        traced.links = [SpanRecord.Link(traceID: .random(), spanID: .random(), attributes: secret)]
        exporter.enqueue(traced, redacting: SecretRedaction())
        exporter.enqueue(LogRecord(time: UnixNanos(2), severity: .info, label: "app", message: "kept", metadata: secret))
        try exporter.start()
        let batches = try await sink.batches(totalling: 3)
        let logs = batches.flatMap(\.batch.logs)
        let spans = batches.flatMap(\.batch.spans)
        #expect(logs.map(\.metadata) == [redacted, secret])
        #expect(spans.first?.attributes == redacted)
        #expect(spans.first?.events.first?.attributes == redacted)
        #expect(spans.first?.links.first?.attributes == redacted)
        await exporter.stop()
        await sink.stop()
    }

    @Test("stop() delivers what is queued before it returns, connecting first when the exporter has only just started")
    func stopFlushes() async throws {
        let sink = try await TelemetrySink.start()
        let exporter = TelemetryExporter(configuration: sinkConfiguration(sink))
        for number in 1...10 { exporter.enqueue(line(number)) }
        try exporter.start()
        await exporter.stop()
        #expect(exporter.statistics.sent == 10)
        #expect(try await sink.batches(totalling: 10).flatMap(\.batch.logs) == (1...10).map { line($0) })
        await sink.stop()
    }

    @Test("on a shared transceiver, records go to the peer that accepts telemetry and not to one that does not; the transceiver keeps running after stop")
    func sharedTransceiver() async throws {
        let sink = try await TelemetrySink.start()
        let bystander = Transceiver(configuration: .init(name: "bystander", identity: .ephemeral, listenHost: "127.0.0.1", port: 0, logger: quietLogger))
        bystander.receive(Echo.self) { _, _ in }
        try await bystander.start()
        let app = Transceiver(configuration: .init(name: "shared-app", identity: .ephemeral, listenHost: nil, logger: quietLogger))
        try await app.start()
        _ = try await app.connect(to: Endpoint(host: "127.0.0.1", port: sink.port))
        _ = try await app.connect(to: Endpoint(host: "127.0.0.1", port: bystander.listeningPort!))

        let exporter = TelemetryExporter(configuration: .init(appName: "unused", destination: .transceiver(app), logger: quietLogger))
        try exporter.start()
        for number in 1...3 { exporter.enqueue(line(number)) }
        let batches = try await sink.batches(totalling: 3)
        #expect(batches.allSatisfy { $0.peer.id == app.localPeerID })
        await exporter.stop()
        #expect(app.isRunning)
        #expect(bystander.statistics.messagesReceived == 0)
        await app.stop()
        await bystander.stop()
        await sink.stop()
    }

    @Test("an exporter sharing a RemoteDebugger's connection sends from the same peer as its states, so parleyd keeps them in one session")
    func sharingRemoteDebugger() async throws {
        let sink = try await TelemetrySink.start(acceptingStates: true)
        let debugger = makeClient(port: sink.port)
        let exporter = TelemetryExporter(sharing: debugger)
        try debugger.start()
        try exporter.start()
        debugger.write(action: .increment, state: sampleState(1))
        exporter.enqueue(line(1))
        let state = try await sink.states.next()
        let batch = try #require(try await sink.batches(totalling: 1).first)
        #expect(batch.peer.id == state.id)
        await exporter.stop()
        await debugger.stop()
        await sink.stop()
    }
}

// MARK: - Support

private func line(_ number: Int) -> LogRecord {
    LogRecord(time: UnixNanos(UInt64(number)), severity: .info, label: "app", message: "line \(number)", metadata: ["n": .int(Int64(number))])
}

private func span(_ name: String) -> SpanRecord {
    SpanRecord(traceID: .random(), spanID: .random(), name: name, start: UnixNanos(1), end: UnixNanos(2))
}

private func unreachableConfiguration(queueCapacity: Int) -> TelemetryExporterConfiguration {
    // Port 9 (discard): nothing listens there on loopback; the exporter dials, is refused, and retries.
    TelemetryExporterConfiguration(
        appName: "telemetry-app", destination: .debugger(.endpoint(host: "127.0.0.1", port: 9)), queueCapacity: queueCapacity, identity: .ephemeral, trust: .anyOpen,
        flushTimeout: .milliseconds(100), logger: quietLogger
    )
}

private func sinkConfiguration(_ sink: TelemetrySink) -> TelemetryExporterConfiguration {
    TelemetryExporterConfiguration(
        appName: "telemetry-app", destination: .debugger(.endpoint(host: "127.0.0.1", port: sink.port)), identity: .ephemeral, trust: .anyOpen, flushTimeout: .seconds(20),
        logger: quietLogger
    )
}

/// Stands in for parleyd: accepts `parley.telemetry.Batch` (so its hello lists it) and hands each batch over.
final class TelemetrySink: Sendable {
    struct Arrival: Sendable {
        var batch: TelemetryBatch
        var bytes: Int
        var peer: Peer
    }

    let transceiver: Transceiver
    let arrivals = Inbox<Arrival>()
    /// The peers that sent a state record.
    let states = Inbox<Peer>()

    private init(acceptingStates: Bool) {
        transceiver = Transceiver(configuration: .init(name: "telemetry-sink", identity: .ephemeral, listenHost: "127.0.0.1", port: 0, logger: quietLogger))
        transceiver.receiveRaw(typeName: TelemetryBatch.messageType) { [arrivals] message, peer in
            let batch = try JSONDecoder().decode(TelemetryBatch.self, from: Data(message.payload.readableBytesView))
            arrivals.put(Arrival(batch: batch, bytes: message.payload.readableBytes, peer: peer))
        }
        if acceptingStates {
            transceiver.receiveRaw(typeName: StateRecord.messageType) { [states] _, peer in states.put(peer) }
        }
    }

    static func start(acceptingStates: Bool = false) async throws -> TelemetrySink {
        let sink = TelemetrySink(acceptingStates: acceptingStates)
        try await sink.transceiver.start()
        return sink
    }

    var port: Int { transceiver.listeningPort! }

    /// Batches as they arrive, until they hold `count` records together.
    func batches(totalling count: Int) async throws -> [Arrival] {
        var arrived: [Arrival] = []
        while arrived.reduce(0, { $0 + $1.batch.count }) < count {
            arrived.append(try await arrivals.next())
        }
        return arrived
    }

    func stop() async { await transceiver.stop() }
}
