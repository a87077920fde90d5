// What a log call costs an app that bootstraps ParleyLogHandler, beside swift-log's StreamLogHandler writing to
// /dev/null, in one run: p50 nanoseconds per call at the handler's level and below it, and the calls per second
// an app keeps up with no parleyd reachable (every record then ends in the exporter's bounded queue, which drops
// the oldest). Build in release: swift build -c release --product parley-telemetry-bench.
//
// A call is timed in runs of `callsPerRun` calls (one clock read costs about as much as a call below the level);
// the p50 is the median run's time divided by its calls.

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Logging
import ParleyLogging
import ParleyRemoteDebugger
import ParleyTracing
import Tracing

let callsPerRun = 1_000
let runs = 400

/// /dev/null as StreamLogHandler's standard error: each line written at once (its stderr stream flushes every line).
struct DevNull: TextOutputStream, Sendable {
    let descriptor = open("/dev/null", O_WRONLY)

    func write(_ string: String) {
        var string = string
        string.withUTF8 { bytes in _ = Foundation.write(descriptor, bytes.baseAddress, bytes.count) }
    }
}

func nanoseconds() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

/// The median, over `runs` runs of `callsPerRun` calls, of nanoseconds per call.
func p50(_ call: () -> Void) -> Double {
    for _ in 0..<callsPerRun * 20 { call() }  // warm up: caches, the queue filled, lazy state made
    var perCall: [Double] = []
    perCall.reserveCapacity(runs)
    for _ in 0..<runs {
        let start = nanoseconds()
        for _ in 0..<callsPerRun { call() }
        perCall.append(Double(nanoseconds() - start) / Double(callsPerRun))
    }
    perCall.sort()
    return perCall[perCall.count / 2]
}

/// Calls per second over `seconds`.
func rate(seconds: Double, _ call: () -> Void) -> Double {
    let start = nanoseconds()
    let end = start + UInt64(seconds * 1e9)
    var calls = 0
    var now = start
    while now < end {
        for _ in 0..<callsPerRun { call() }
        calls += callsPerRun
        now = nanoseconds()
    }
    return Double(calls) / (Double(now - start) / 1e9)
}

func format(_ value: Double) -> String { String(format: "%8.1f", value) }

// A port nothing listens on: the exporter dials, is refused, and retries with backoff the whole run.
let unreachable = DebuggerLocation.endpoint(host: "127.0.0.1", port: 9)
let exporter = TelemetryExporter(
    configuration: .init(appName: "telemetry-bench", destination: .debugger(unreachable), identity: .ephemeral, trust: .anyOpen, logger: Logger(label: "bench") { _ in SwiftLogNoOpLogHandler() })
)
try exporter.start()

let parley = Logger(label: "bench.parley") { ParleyLogHandler(label: $0, exporter: exporter, level: .info, metadataProvider: nil) }
let stream = Logger(label: "bench.stream") { label in
    var handler = StreamLogHandler(label: label, stream: DevNull(), metadataProvider: nil)
    handler.logLevel = .info
    return handler
}
let metadata: Logger.Metadata = ["path": "/items/42", "status": "200"]

let parleyAt = p50 { parley.info("request handled", metadata: metadata) }
let streamAt = p50 { stream.info("request handled", metadata: metadata) }
let parleyBelow = p50 { parley.debug("request handled", metadata: metadata) }
let streamBelow = p50 { stream.debug("request handled", metadata: metadata) }
let tracer = ParleyTracer(exporter: exporter)
let parleyInSpan = tracer.withSpan("bench") { _ in p50 { parley.info("request handled", metadata: metadata) } }
let callsPerSecond = rate(seconds: 2) { parley.info("request handled", metadata: metadata) }
let statistics = exporter.statistics
await exporter.stop()

print("log call, p50 ns per call (runs of \(callsPerRun), median of \(runs)); no parleyd reachable")
print("  ParleyLogHandler at the level:          \(format(parleyAt))")
print("  ParleyLogHandler at the level, in span: \(format(parleyInSpan))")
print("  StreamLogHandler to /dev/null:          \(format(streamAt))")
print("  ratio ParleyLogHandler / Stream:        \(String(format: "%8.2f", parleyAt / streamAt))   (goal <= 2)")
print("  ParleyLogHandler below the level:       \(format(parleyBelow))   (goal <= 50)")
print("  StreamLogHandler below the level:       \(format(streamBelow))")
print("app's log rate with no parleyd reachable: \(String(format: "%.0f", callsPerSecond)) calls/s at the level")
print("  exporter: \(statistics.dropped) records dropped (queue of \(exporter.configuration.queueCapacity) full), \(statistics.sent) sent")
