import Foundation
import NIOCore
import Parley
import ParleyControl
import ParleyDebugger
import ParleyTelemetry
import ParleyTestSupport
import Synchronization

/// apps → parleyd → history: log records (or spans) in `parley.telemetry.Batch` messages of 512, as
/// `TelemetryExporter` sends them, from one app and from ten at once, into a parleyd of its own. The rate is of
/// records stored: from the first send until parleyd has stored each app's last batch (a marker log record after
/// its records, which parleyd pushes to a follower once stored: no polling). Meanwhile a bystander asks
/// `parleyctl status`'s question over the control socket every 10 ms; its answer times are the
/// figure that says whether storing holds up the rest of parleyd.
func telemetryIntoDaemon(scale: Scale, report: inout Report) async throws {
    let daemon = try await storingDaemon(arguments: ["--web-listen", "off", "--otlp-listen", "off"])
    defer { daemon.kill() }
    let follower = Transceiver(configuration: configuration("bench-follower", listen: false, secret: nil))
    let markers = AsyncStream.makeStream(of: String.self)
    follower.receive(TelemetryControl.LogAppended.self) { message, _ in markers.continuation.yield(message.record.record.message) }
    try await follower.start()
    let control = try await follower.connect(toUnixSocket: daemon.controlSocket)
    _ = try await follower.request(
        TelemetryControl.FollowLogs(query: LogQuery(label: "bench.marker")), from: control, expecting: TelemetryControl.FollowingLogs.self)
    var arrived = markers.stream.makeAsyncIterator()

    let batchSize = 512
    let batches = scale.of(400, minimum: 20)
    // Encoded before the clock starts, each batch later than the one before as an app's are (the same times again
    // would insert into the middle of parleyd's time index, which no app does).
    let firstTime = UnixNanos.now.value
    func time(_ batch: Int, _ index: Int) -> UnixNanos { UnixNanos(firstTime + UInt64(batch * batchSize + index) * 1_000) }
    let logBatches = try (0..<batches).map { batch in
        try encodedBatch(logs: (0..<batchSize).map { index in
            LogRecord(
                time: time(batch, index), severity: .info, label: "bench.app", message: "request \(index) handled in 1.2 ms",
                metadata: ["path": .string("/items/\(index)"), "status": .int(200)], source: "Bench", file: "Bench.swift", function: "run()",
                line: 42)
        })
    }
    let trace = TraceID.random()
    let spanBatches = try (0..<batches).map { batch in
        try encodedBatch(spans: (0..<batchSize).map { index in
            SpanRecord(
                traceID: trace, spanID: .random(), name: "GET /items/{id}", kind: .server, start: time(batch, index),
                end: UnixNanos(time(batch, index).value + 1_200_000),
                attributes: ["http.request.method": .string("GET"), "http.response.status_code": .int(200), "url.path": .string("/items/\(index)")])
        })
    }

    /// Sends `batches` batches from each of `apps` apps, then each app's marker; seconds until every marker is stored.
    func run(apps: Int, batches: Int, payloads: [ByteBuffer]) async throws -> (seconds: Double, status: [Double]) {
        var senders: [(Transceiver, Peer)] = []
        for index in 0..<apps {
            let app = Transceiver(configuration: configuration("bench-app-\(index)", listen: false, secret: nil))
            try await app.start()
            senders.append((app, try await app.connect(to: daemon.endpoint)))
        }
        let done = Atomic<Bool>(false)
        let bystander = Task {
            var times: [Double] = []
            while !done.load(ordering: .relaxed) {
                let start = ContinuousClock.now
                _ = try await follower.request(Control.Status(), from: control, expecting: Control.StatusReport.self)
                times.append(seconds(ContinuousClock.now - start) * 1e3)
                // A person's status, a hundred times a second: asked back to back it would take a core from parleyd.
                try await Task.sleep(for: .milliseconds(10))
            }
            return times
        }
        let start = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (number, (app, parleyd)) in senders.enumerated() {
                group.addTask {
                    for payload in payloads.prefix(batches) { try await app.sendRaw(typeName: TelemetryBatch.messageType, payload: payload, to: parleyd.id) }
                    let marker = try encodedBatch(logs: [LogRecord(time: .now, severity: .notice, label: "bench.marker", message: "app \(number) done")])
                    try await app.sendRaw(typeName: TelemetryBatch.messageType, payload: marker, to: parleyd.id)
                }
            }
            try await group.waitForAll()
        }
        for _ in 0..<apps { _ = await arrived.next() }
        let elapsed = seconds(ContinuousClock.now - start)
        done.store(true, ordering: .relaxed)
        let status = try await bystander.value.sorted()
        for (app, _) in senders { await app.stop() }
        return (elapsed, status)
    }

    for (name, apps, payloads, what) in [
        ("telemetry_logs_1", 1, logBatches, "log records from one app"), ("telemetry_logs_10", 10, logBatches, "log records from ten apps"),
        ("telemetry_spans_1", 1, spanBatches, "spans from one app"),
    ] {
        let perApp = apps == 1 ? batches : max(1, batches / apps)
        let (elapsed, status) = try await run(apps: apps, batches: perApp, payloads: payloads)
        let rate = Double(apps * perApp * batchSize) / elapsed
        let p50 = status.isEmpty ? 0 : status[status.count / 2]
        let worst = status.last ?? 0
        report.record(name, rate, unit: "records/s")
        report.record(name + "_status_p50", p50, unit: "ms")
        report.record(
            name + "_status_max", worst, unit: "ms",
            line: "stored by parleyd, \(what): "
                + "\(format(rate)) records/s; a bystander's status answered in p50 \(format(p50)) ms, at worst \(format(worst)) ms (\(status.count) asked)")
    }
    await follower.stop()
    _ = try await daemon.stop()
}

func encodedBatch(logs: [LogRecord] = [], spans: [SpanRecord] = []) throws -> ByteBuffer {
    ByteBuffer(bytes: try JSONEncoder().encode(TelemetryBatch(logs: logs, spans: spans)))
}

/// A parleyd of the benchmark's own ($PARLEYD, else parleyd on the PATH) with room for every record of the run:
/// retention at work would be another measurement.
func storingDaemon(arguments: [String]) async throws -> ParleydProcess {
    try await ParleydProcess.start(
        name: "bench-parleyd", arguments: arguments + ["--log-level", "notice"],
        environment: ["PARLEY_HISTORY_MAX_ENTRIES": "2000000000", "PARLEY_HISTORY_MAX_BYTES": "\(64 << 30)"],
        executable: ProcessInfo.processInfo.environment["PARLEYD"] ?? "parleyd", readyTimeout: .seconds(30)
    )
}
