import Foundation
import NIOCore
import ParleyHistory
import ParleyJSON
import ParleyTelemetry

/// What storing an app's log records costs parleyd in one process, by step: reading a `parley.telemetry.Batch`
/// of 512 (as `TelemetryExporter` sends them) and storing it in the history.
func telemetryFigures(batches: Int) async throws {
    let records = (0..<512).map { index in
        LogRecord(
            time: .now, severity: .info, label: "bench.app", message: "request \(index) handled in 1.2 ms",
            metadata: ["path": .string("/items/\(index)"), "status": .int(200)], source: "Bench", file: "Bench.swift", function: "run()", line: 42)
    }
    let payload = ByteBuffer(bytes: try JSONEncoder().encode(TelemetryBatch(logs: records)))
    let decode = try await median(runs: 21) { _ = try JSONDecoder().decode(TelemetryBatch.self, from: Data(payload.readableBytesView)) }
    let parse = try await median(runs: 21) { _ = try JSONValue(parsing: payload) }
    let tree = try await median(runs: 21) { _ = try JSONValueDecoder().decode(TelemetryBatch.self, from: payload) }
    let direct = try await median(runs: 21) {
        guard case .array(let elements)? = try JSONValue(parsing: payload)["logs"] else { return }
        _ = elements.map { LogRecord(reading: $0) }
    }
    print("read a batch of 512 log records (\(payload.readableBytes) bytes): Foundation's JSONDecoder \(format(decode * 1000 / 512, 2)) µs/record, JSONValueDecoder \(format(tree * 1000 / 512, 2)) µs/record, straight from the tree (LogRecord(reading:), as parleyd does) \(format(direct * 1000 / 512, 2)) µs/record, of which parsing \(format(parse * 1000 / 512, 2)) µs")

    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("parley-telemetry-bench-\(UUID())").path
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let store = try await HistoryStore.open(directory: directory, limits: RetentionLimits(maxEntries: 1 << 40, maxBytes: 1 << 40))
    let session = try await store.beginSession(peerID: "bench", appName: "Bench", kind: .parley)
    // Each batch later than the one before, as an app's are: the same times again would insert into the middle of
    // the time index instead of at its end, which no app does.
    let base = UnixNanos.now.value
    let timed = (0..<batches).map { number in
        TelemetryBatch(logs: records.enumerated().map { index, record in
            var record = record
            record.time = UnixNanos(base + UInt64(number * 512 + index) * 1_000)
            return record
        })
    }
    // Half one at a time (each its own transaction), half as parleyd's lanes hand them to the store under load: up
    // to four waiting while one is stored, which the store takes into one transaction.
    let half = batches / 2
    let start = clock.now
    for batch in timed[..<half] { _ = try await store.appendTelemetry(batch, to: session.id) }
    let elapsed = milliseconds(clock.now - start) / 1000
    let queuedStart = clock.now
    var queued: [TelemetryAppend] = []
    for batch in timed[half...] {
        queued.append(store.enqueueTelemetry(batch, to: session.id))
        if queued.count > 4 { _ = try await queued.removeFirst().stored() }
    }
    for append in queued { _ = try await append.stored() }
    let queuedElapsed = milliseconds(clock.now - queuedStart) / 1000
    func rate(_ records: Int, _ seconds: Double) -> String {
        "\(format(Double(records) / seconds, 0)) records/s (\(format(seconds * 1e6 / Double(records), 2)) µs/record)"
    }
    print("store batches of 512 log records: one at a time \(rate(half * 512, elapsed)), four waiting \(rate((batches - half) * 512, queuedElapsed))")

    // Spans as a service's requests make them: each batch sixteen traces of a root and 31 children.
    let spanBatches = (0..<batches).map { number in
        TelemetryBatch(spans: (0..<16).flatMap { traceNumber in
            let trace = TraceID.random()
            let root = SpanID.random()
            return (0..<32).map { index in
                let start = UnixNanos(base + UInt64(number * 512 + traceNumber * 32 + index) * 1_000)
                return SpanRecord(
                    traceID: trace, spanID: index == 0 ? root : .random(), parentSpanID: index == 0 ? nil : root,
                    name: index == 0 ? "GET /items/{id}" : "SELECT items", kind: index == 0 ? .server : .client, start: start,
                    end: UnixNanos(start.value + 900_000), attributes: ["http.response.status_code": .int(200), "db.system": .string("sqlite")])
            }
        })
    }
    let spanStart = clock.now
    for batch in spanBatches { _ = try await store.appendTelemetry(batch, to: session.id) }
    let spanElapsed = milliseconds(clock.now - spanStart) / 1000
    let newest = try await median(runs: 21) { _ = try await store.traces(limit: 20) }
    let ofSession = try await median(runs: 21) { _ = try await store.traces(session: session.id, limit: 20) }
    print("store batches of 512 spans (16 traces each): \(format(Double(batches * 512) / spanElapsed, 0)) spans/s; the newest 20 of \(batches * 16) traces: \(format(newest, 2)) ms, of the session \(format(ofSession, 2)) ms")
    try await store.close()
}
