import AsyncHTTPClient
import Foundation
import NIOCore
import Parley
import ParleyDebugger
import ParleyOTLP
import ParleyTelemetry
import ParleyTestSupport
import Synchronization

/// Spans into parleyd's history over OTLP/HTTP, against the same spans sent as Parley messages (`--only otlp`).
///
/// * A Swift load generator: `ExportTraceServiceRequest`s of 512 spans in protobuf (ParleyOTLP's encoder), each
///   POSTed by AsyncHTTPClient as soon as the one before was answered, from one exporter and from four at once
///   (each its own service instance). parleyd answers an export once it has stored it, so the rate is spans over
///   the time until the last answer.
/// * The same spans (the same attributes, a fresh id each) as `parley.telemetry.Batch` messages of 512 from one app,
///   until a marker log record sent after them is stored (as the telemetry rows measure).
/// * The OpenTelemetry Python SDK's exporter, when python3 has it: Benchmarks/otlp_sdk_spans.py.
///
/// Meanwhile a bystander asks the web debugger for its sessions and its newest traces every 10 ms, as an open page
/// does when it loads; its answer times say whether storing holds the web debugger up (goal: < 100 ms).
func otlpIntoDaemon(scale: Scale, report: inout Report) async throws {
    let daemon = try await storingDaemon(arguments: ["--web-listen", "127.0.0.1:0", "--otlp-listen", "127.0.0.1:0"])
    defer { daemon.kill() }
    guard let endpoint = daemon.ready.otlp, let web = daemon.webURL else {
        throw PeerProcessError("parleyd's readiness line names no OTLP receiver or no web debugger")
    }
    let http = HTTPClient(eventLoopGroupProvider: .singleton)
    do {
        try await measureOTLP(daemon: daemon, endpoint: endpoint, web: web, http: http, scale: scale, report: &report)
    } catch {
        try? await http.shutdown()
        throw error
    }
    try await http.shutdown()
    _ = try await daemon.stop()
}

private let batchSize = 512

/// `batches` batches of 512 server spans, one trace each, every span later than the one before (as an app's are:
/// the same times again would insert into the middle of parleyd's time index).
private func spanBatches(_ batches: Int) -> [[SpanRecord]] {
    let first = UnixNanos.now.value
    return (0..<batches).map { batch in
        let trace = TraceID.random()
        return (0..<batchSize).map { index in
            let start = UnixNanos(first + UInt64(batch * batchSize + index) * 1_000)
            return SpanRecord(
                traceID: trace, spanID: .random(), name: "GET /items/{id}", kind: .server, start: start, end: UnixNanos(start.value + 1_200_000),
                attributes: ["http.request.method": .string("GET"), "http.response.status_code": .int(200), "url.path": .string("/items/\(index)")])
        }
    }
}

private func measureOTLP(daemon: ParleydProcess, endpoint: String, web: String, http: HTTPClient, scale: Scale, report: inout Report) async throws {
    let batches = scale.of(400, minimum: 20)

    /// What the bystander measured: the answer times (ms, sorted) of the sessions list and of the newest traces.
    struct WebTimes: Sendable {
        var sessions: [Double] = []
        var traces: [Double] = []
        var all: [Double] { (sessions + traces).sorted() }
        static func median(_ sorted: [Double]) -> Double { sorted.isEmpty ? 0 : sorted[sorted.count / 2] }
        var text: String {
            "the web debugger answered its sessions in p50 \(format(Self.median(sessions))) ms, at worst \(format(sessions.last ?? 0)) ms, "
                + "its newest traces in p50 \(format(Self.median(traces))) ms, at worst \(format(traces.last ?? 0)) ms (\(sessions.count + traces.count) asked)"
        }
    }

    /// Runs `work` while the bystander asks the web debugger: what it gave, its seconds and the bystander's times.
    func whileWatched<T: Sendable>(_ work: @Sendable () async throws -> T) async throws -> (result: T, seconds: Double, web: WebTimes) {
        let done = Atomic<Bool>(false)
        let bystander = Task {
            var times = WebTimes()
            while !done.load(ordering: .relaxed) {
                for path in ["api/sessions?limit=20", "api/traces?limit=20"] {
                    let start = ContinuousClock.now
                    let response = try await http.execute(HTTPClientRequest(url: web + path), timeout: .seconds(30))
                    _ = try await response.body.collect(upTo: 16 << 20)
                    guard response.status == .ok else { throw PeerProcessError("the web debugger answered GET /\(path) with \(response.status)") }
                    let elapsed = seconds(ContinuousClock.now - start) * 1e3
                    if path.hasPrefix("api/sessions") { times.sessions.append(elapsed) } else { times.traces.append(elapsed) }
                    try await Task.sleep(for: .milliseconds(10))
                }
            }
            times.sessions.sort()
            times.traces.sort()
            return times
        }
        let start = ContinuousClock.now
        let result: T
        do {
            result = try await work()
        } catch {
            done.store(true, ordering: .relaxed)
            _ = try? await bystander.value
            throw error
        }
        let elapsed = seconds(ContinuousClock.now - start)
        done.store(true, ordering: .relaxed)
        return (result, elapsed, try await bystander.value)
    }

    func recordWeb(_ name: String, _ web: WebTimes) {
        report.record(name + "_web_p50", WebTimes.median(web.all), unit: "ms")
        report.record(name + "_web_max", web.all.last ?? 0, unit: "ms")
    }

    func record(_ name: String, spans: Int, _ measured: (result: Void, seconds: Double, web: WebTimes), what: String) {
        let rate = Double(spans) / measured.seconds
        report.record(name, rate, unit: "spans/s", line: "stored by parleyd, \(what): \(format(rate)) spans/s; " + measured.web.text)
        recordWeb(name, measured.web)
    }

    // The Swift load generator, from one exporter and from four.
    for exporters in [1, 4] {
        let bodies = try spanBatches(batches).enumerated().map { index, spans in
            let resource = OTLPExportRequest.Resource(
                attributes: ["service.name": .string("bench-otlp"), "service.instance.id": .string("exporter-\(index % exporters)")],
                batch: TelemetryBatch(spans: spans))
            return ByteBuffer(bytes: try OTLPExportRequest.encode([resource], signal: .traces))
        }
        let measured = try await whileWatched {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for exporter in 0..<exporters {
                    group.addTask {
                        for body in stride(from: exporter, to: bodies.count, by: exporters).map({ bodies[$0] }) {
                            try await export(body, to: endpoint, http: http)
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
        record(
            "otlp_swift_\(exporters)", spans: batches * batchSize, measured,
            what: "OTLP/protobuf batches of 512 from \(exporters == 1 ? "one Swift exporter" : "\(exporters) Swift exporters at once")")
    }

    // The same spans as Parley messages from one app.
    let follower = Transceiver(configuration: configuration("bench-follower", listen: false, secret: nil))
    let markers = AsyncStream.makeStream(of: String.self)
    follower.receive(TelemetryControl.LogAppended.self) { message, _ in markers.continuation.yield(message.record.record.message) }
    try await follower.start()
    let control = try await follower.connect(toUnixSocket: daemon.controlSocket)
    _ = try await follower.request(
        TelemetryControl.FollowLogs(query: LogQuery(label: "bench.marker")), from: control, expecting: TelemetryControl.FollowingLogs.self)
    let app = Transceiver(configuration: configuration("bench-app", listen: false, secret: nil))
    try await app.start()
    let parleyd = try await app.connect(to: daemon.endpoint)
    let payloads = try spanBatches(batches).map { try encodedBatch(spans: $0) }
    let marker = try encodedBatch(logs: [LogRecord(time: .now, severity: .notice, label: "bench.marker", message: "otlp comparison done")])
    let measured = try await whileWatched {
        for payload in payloads { try await app.sendRaw(typeName: TelemetryBatch.messageType, payload: payload, to: parleyd.id) }
        try await app.sendRaw(typeName: TelemetryBatch.messageType, payload: marker, to: parleyd.id)
        for await message in markers.stream where message == "otlp comparison done" { break }
    }
    record("otlp_parley_1", spans: batches * batchSize, measured, what: "the same spans as Parley messages of 512 from one app")
    await app.stop()
    await follower.stop()

    // The OpenTelemetry Python SDK, when this machine has it.
    let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("otlp_sdk_spans.py").path
    let probe = try? await ChildProcess.run("/usr/bin/env", ["python3", "-c", "import opentelemetry.sdk, opentelemetry.exporter.otlp.proto.http"])
    guard probe?.status == 0, FileManager.default.fileExists(atPath: script) else {
        report.say("the OpenTelemetry Python SDK: not measured (python3 with opentelemetry-sdk and opentelemetry-exporter-otlp-proto-http, and \(script), are needed; scripts/require-packages installs the SDK)")
        return
    }
    let spans = scale.of(50_000, minimum: 5_000)
    let python = try await whileWatched {
        try await ChildProcess.run("/usr/bin/env", ["python3", script, "--endpoint", endpoint, "--spans", "\(spans)"], timeout: .seconds(900))
    }
    let result = python.result
    struct SDKFigures: Decodable {
        var exporter: Double
        var sdk: Double
        var exporterSeconds: Double
        var sdkSeconds: Double
        var spanCreationSeconds: Double
    }
    guard result.status == 0, let figures = try? JSONDecoder().decode(SDKFigures.self, from: Data(result.stdout.utf8)) else {
        throw PeerProcessError("Benchmarks/otlp_sdk_spans.py failed (\(result.status)): \(result.stderr.suffix(2000))")
    }
    report.record("otlp_python_exporter", figures.exporter, unit: "spans/s")
    report.record(
        "otlp_python_sdk", figures.sdk, unit: "spans/s",
        line: "stored by parleyd from the OpenTelemetry Python SDK: its exporter, batches of 512 one after the other, \(format(figures.exporter)) spans/s; "
            + "BatchSpanProcessor(max_export_batch_size=512) with the spans made as it goes, \(format(figures.sdk)) spans/s "
            + "(\(format(figures.spanCreationSeconds)) of its \(format(figures.sdkSeconds)) s making \(spans) spans in Python); " + python.web.text)
    recordWeb("otlp_python", python.web)
}

/// POSTs one export and waits for parleyd's answer: 200 with nothing refused, or an error.
private func export(_ body: ByteBuffer, to endpoint: String, http: HTTPClient) async throws {
    var request = HTTPClientRequest(url: endpoint + "/v1/traces")
    request.method = .POST
    request.headers.add(name: "Content-Type", value: "application/x-protobuf")
    request.body = .bytes(body)
    let response = try await http.execute(request, timeout: .seconds(60))
    let answer = try await response.body.collect(upTo: 1 << 20)
    // An empty ExportTraceServiceResponse: no partial success, every span stored.
    guard response.status == .ok, answer.readableBytes == 0 else {
        throw PeerProcessError("parleyd answered an export with \(response.status): \(String(buffer: answer))")
    }
}
