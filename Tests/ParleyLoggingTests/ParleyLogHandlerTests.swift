import Logging
import Parley
import ParleyLogging
import ParleyRemoteDebugger
import ParleyTelemetry
import ParleyTestSupport
import ParleyTracing
import Testing
import Tracing

/// The handler against an exporter that is never started: what it queues is what would leave the app.
@Suite("ParleyLogHandler")
struct ParleyLogHandlerTests {
    @Test("a record at or above the handler's level is queued; one below it never reaches the handler")
    func levelFiltering() {
        let exporter = idleExporter()
        let logger = Logger(label: "app.levels") { ParleyLogHandler(label: $0, exporter: exporter, level: .notice, metadataProvider: nil) }
        for level in Logger.Level.allCases { logger.log(level: level, "\(level)") }
        #expect(exporter.logs.map(\.severity) == [.notice, .warning, .error, .critical])
        #expect(exporter.logs.map(\.message) == ["notice", "warning", "error", "critical"])
    }

    @Test("a record carries the time, label, message, source, file, function and line of the call")
    func recordFields() throws {
        let exporter = idleExporter()
        let logger = Logger(label: "app.fields") { ParleyLogHandler(label: $0, exporter: exporter, metadataProvider: nil) }
        let before = UnixNanos.now
        logger.warning("disk almost full", source: "Storage"); let line = UInt(#line)
        let record = try #require(exporter.logs.first)
        #expect(record.time >= before && record.time <= UnixNanos.now)
        #expect(record.label == "app.fields")
        #expect(record.message == "disk almost full")
        #expect(record.source == "Storage")
        #expect(record.file.hasSuffix("ParleyLogHandlerTests.swift"))
        #expect(record.function == "recordFields()")
        #expect(record.line == line)
        #expect(record.traceID == nil && record.spanID == nil)
    }

    @Test("metadata merges the handler's, the provider's and the call's, later ones winning; values keep their shape")
    func metadataMerging() throws {
        let exporter = idleExporter()
        let provider = Logger.MetadataProvider { ["shared": "provider", "request-id": "r-7"] }
        var logger = Logger(label: "app.metadata") { ParleyLogHandler(label: $0, exporter: exporter, metadataProvider: provider) }
        logger[metadataKey: "shared"] = "handler"
        logger[metadataKey: "component"] = "sync"
        logger.info(
            "saved",
            metadata: [
                "shared": "call", "count": .stringConvertible(3), "ratio": .stringConvertible(0.5), "ok": .stringConvertible(true),
                "tags": ["a", "b"], "item": ["id": "42", "size": .stringConvertible(UInt64(7))],
                "big": .stringConvertible(UInt64.max), "url": .stringConvertible(Endpoint(host: "h", port: 1)),
            ]
        )
        let metadata = try #require(exporter.logs.first).metadata
        let expected: TelemetryAttributes = [
            "shared": .string("call"), "component": .string("sync"), "request-id": .string("r-7"), "count": .int(3), "ratio": .double(0.5),
            "ok": .bool(true), "tags": .array([.string("a"), .string("b")]), "item": .map(["id": .string("42"), "size": .int(7)]),
            "big": .string(String(UInt64.max)), "url": .string("h:1"),
        ]
        #expect(metadata == expected)
    }

    @Test("an error given with the call becomes error.type and error.message")
    func errorMetadata() throws {
        struct DiskFull: Error, CustomStringConvertible { var description: String { "no space left" } }
        let exporter = idleExporter()
        let logger = Logger(label: "app.error") { ParleyLogHandler(label: $0, exporter: exporter, metadataProvider: nil) }
        logger.error("save failed", error: DiskFull())
        let metadata = try #require(exporter.logs.last).metadata
        #expect(metadata["error.message"] == .string("no space left"))
        #expect(metadata["error.type"]?.description.hasSuffix("DiskFull") == true)
    }

    @Test("secret-looking keys are redacted at any depth before the record is queued; the words are configurable, .none keeps everything")
    func redaction() throws {
        let exporter = idleExporter()
        let metadata: Logger.Metadata = [
            "user": "ana", "password": "hunter2", "request": ["Authorization": "Bearer abc", "path": "/items"], "api_token": "t", "session": "s",
        ]
        Logger(label: "app.default") { ParleyLogHandler(label: $0, exporter: exporter, metadataProvider: nil) }.info("login", metadata: metadata)
        Logger(label: "app.custom") { ParleyLogHandler(label: $0, exporter: exporter, redaction: SecretRedaction(words: ["session"]), metadataProvider: nil) }
            .info("login", metadata: metadata)
        Logger(label: "app.none") { ParleyLogHandler(label: $0, exporter: exporter, redaction: .none, metadataProvider: nil) }.info("login", metadata: metadata)
        let logs = exporter.logs
        try #require(logs.count == 3)
        let redacted = SecretRedaction.replacement
        #expect(logs[0].metadata["password"] == redacted)
        #expect(logs[0].metadata["api_token"] == redacted)
        #expect(logs[0].metadata["request"] == .map(["Authorization": redacted, "path": .string("/items")]))
        #expect(logs[0].metadata["user"] == .string("ana"))
        #expect(logs[1].metadata["session"] == redacted)
        #expect(logs[1].metadata["password"] == .string("hunter2"))
        #expect(logs[2].metadata == ParleyLogHandler.convert(metadata))
    }

    @Test("metadata nested deeper than the limits is cut to \"…\" while it is converted")
    func deepNesting() {
        var value: Logger.MetadataValue = "bottom"
        for _ in 0..<10_000 { value = .array([value]) }
        let converted = ParleyLogHandler.convert(["deep": value])
        var depth = 0
        var current = converted["deep"]
        while case .array(let items)? = current {
            depth += 1
            current = items.first
        }
        #expect(depth == TelemetryLimits.default.maximumDepth)
        #expect(current == .string("…"))
    }

    @Test("beside the app's own handler in a MultiplexLogHandler, both get every record at their level")
    func multiplex() async throws {
        let exporter = idleExporter()
        let capture = LogCapture()
        let logger = Logger(label: "app.multiplex") { label in
            MultiplexLogHandler([capture.logger.handler, ParleyLogHandler(label: label, exporter: exporter, level: .warning, metadataProvider: nil)])
        }
        logger.info("only local")
        logger.error("both", metadata: ["password": "x"])
        #expect(capture.all.map(\.message) == ["only local", "both"])
        #expect(exporter.logs.map(\.message) == ["both"])
        #expect(exporter.logs.first?.metadata["password"] == SecretRedaction.replacement)
    }

    @Test("a line written inside a ParleyTracer span carries its trace and span id; one under an extracted remote parent does not")
    func traceCorrelation() throws {
        let exporter = idleExporter()
        let tracer = ParleyTracer(exporter: exporter)
        let logger = Logger(label: "app.trace") { ParleyLogHandler(label: $0, exporter: exporter, metadataProvider: nil) }
        let span = tracer.withSpan("work") { span in
            logger.info("inside")
            return span
        }
        var remote = ServiceContext.topLevel
        tracer.extract(["traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"], into: &remote, using: DictionaryExtractor())
        ServiceContext.$current.withValue(remote) { logger.info("under a remote parent") }
        let logs = exporter.logs
        try #require(logs.count == 2)
        #expect(logs[0].traceID == span.traceContext.traceID)
        #expect(logs[0].spanID == span.traceContext.spanID)
        #expect(logs[1].traceID == nil && logs[1].spanID == nil)
    }

    @Test("the exporter's own logger is never exported, whatever exporter it is given")
    func exportersOwnLinesStayLocal() {
        let exporter = idleExporter()
        let logger = Logger(label: TelemetryExporter.loggerLabel) { ParleyLogHandler(label: $0, exporter: exporter, level: .trace, metadataProvider: nil) }
        logger.error("telemetry batch not delivered")
        let shared = ParleyLogHandler(label: TelemetryExporter.loggerLabel, appName: "never-made", debugger: .endpoint(host: "127.0.0.1", port: 9))
        #expect(exporter.pendingCount == 0)
        #expect(shared.exporter == nil)
    }

    @Test("with no debugger reachable, 20 000 calls return and everything past the queue's capacity is counted as dropped")
    func neverBlocks() async throws {
        let exporter = TelemetryExporter(
            configuration: .init(
                appName: "unreachable-app", destination: .debugger(.endpoint(host: "127.0.0.1", port: 9)), queueCapacity: 1_000, identity: .ephemeral, trust: .anyOpen,
                flushTimeout: .milliseconds(100), logger: Logger(label: "quiet") { _ in SwiftLogNoOpLogHandler() }
            )
        )
        try exporter.start()
        let logger = Logger(label: "app.flood") { ParleyLogHandler(label: $0, exporter: exporter, metadataProvider: nil) }
        for number in 0..<20_000 { logger.info("line \(number)") }
        #expect(exporter.droppedCount == 19_000)
        #expect(exporter.logs.first?.message == "line 19000")
        await exporter.stop()
    }
}

/// An exporter that is never started: records stay in its queue.
func idleExporter() -> TelemetryExporter {
    TelemetryExporter(
        configuration: .init(
            appName: "idle", destination: .debugger(.endpoint(host: "127.0.0.1", port: 9)), identity: .ephemeral, trust: .anyOpen,
            logger: Logger(label: "quiet") { _ in SwiftLogNoOpLogHandler() }
        )
    )
}

extension TelemetryExporter {
    var logs: [LogRecord] {
        queuedItems.compactMap { if case .log(let record) = $0 { record } else { nil } }
    }
}

struct DictionaryExtractor: Extractor {
    func extract(key: String, from carrier: [String: String]) -> String? { carrier[key] }
}
