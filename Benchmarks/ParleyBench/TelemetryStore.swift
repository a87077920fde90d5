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
    let daemon = try await ParleydProcess.start(
        name: "bench-parleyd",
        arguments: ["--web-listen", "off", "--otlp-listen", "off", "--log-level", "notice"],
        // Room for every record of the run: retention at work would be another measurement.
        environment: ["PARLEY_HISTORY_MAX_ENTRIES": "2000000000", "PARLEY_HISTORY_MAX_BYTES": "\(64 << 30)"],
        executable: ProcessInfo.processInfo.environment["PARLEYD"] ?? "parleyd", readyTimeout: .seconds(30)
    )
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
    let logBatch = try encodedBatch(logs: (0..<batchSize).map { index in
        LogRecord(
            time: .now, severity: .info, label: "bench.app", message: "request \(index) handled in 1.2 ms",
            metadata: ["path": .string("/items/\(index)"), "status": .int(200)], source: "Bench", file: "Bench.swift", function: "run()", line: 42)
    })
    let trace = TraceID.random()
    let spanBatch = try encodedBatch(spans: (0..<batchSize).map { index in
        SpanRecord(
            traceID: trace, spanID: .random(), name: "GET /items/{id}", kind: .server, start: .now, end: UnixNanos(UnixNanos.now.value + 1_200_000),
            attributes: ["http.request.method": .string("GET"), "http.response.status_code": .int(200), "url.path": .string("/items/\(index)")])
    })

    /// Sends `batches` batches from each of `apps` apps, then each app's marker; seconds until every marker is stored.
    func run(apps: Int, batches: Int, payload: ByteBuffer) async throws -> (seconds: Double, status: [Double]) {
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
                    for _ in 0..<batches { try await app.sendRaw(typeName: TelemetryBatch.messageType, payload: payload, to: parleyd.id) }
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

    let batches = scale.of(400, minimum: 20)
    for (name, apps, payload, what) in [
        ("telemetry_logs_1", 1, logBatch, "log records from one app"), ("telemetry_logs_10", 10, logBatch, "log records from ten apps"),
        ("telemetry_spans_1", 1, spanBatch, "spans from one app"),
    ] {
        let perApp = apps == 1 ? batches : max(1, batches / apps)
        let (elapsed, status) = try await run(apps: apps, batches: perApp, payload: payload)
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
