import CompressNIO
import Foundation
import HTTPTypes
import HummingbirdTesting
import Logging
import NIOCore
import ParleyTelemetry
import Synchronization
import Testing

@testable import Hummingbird
@testable import ParleyOTLP
@testable import ParleyWeb

/// What the receiver handed on, and what the test wants it to answer.
final class RecordingSink: OTLPSink {
    private let state = Mutex<[(OTLPExport, OTLPSignal)]>([])
    let outcome: OTLPStoreOutcome
    /// When set, `store` waits here until the test lets it go, having said it arrived.
    let gate: (arrived: AsyncStream<Void>.Continuation, release: AsyncStream<Void>)?

    init(outcome: OTLPStoreOutcome = .stored(rejected: 0, reason: nil), gate: (AsyncStream<Void>.Continuation, AsyncStream<Void>)? = nil) {
        self.outcome = outcome
        self.gate = gate.map { (arrived: $0.0, release: $0.1) }
    }

    var received: [(OTLPExport, OTLPSignal)] { state.withLock { $0 } }

    func store(_ export: OTLPExport, signal: OTLPSignal, client: String) async -> OTLPStoreOutcome {
        state.withLock { $0.append((export, signal)) }
        if let gate {
            gate.arrived.yield()
            for await _ in gate.release { break }
        }
        return outcome
    }
}

@Suite("OTLP/HTTP receiver")
struct OTLPRoutesTests {
    static let protobuf: HTTPFields = [.contentType: "application/x-protobuf"]
    static let json: HTTPFields = [.contentType: "application/json"]

    /// What the receiver said through its `warn`, line by line: the message and its metadata.
    final class Warnings: Sendable {
        private let lines = Mutex<[(message: String, metadata: Logger.Metadata)]>([])
        func add(_ message: Logger.Message, _ metadata: Logger.Metadata) { lines.withLock { $0.append((message.description, metadata)) } }
        var all: [(message: String, metadata: Logger.Metadata)] { lines.withLock { $0 } }
    }

    static func test(
        sink: RecordingSink, warnings: Warnings = Warnings(), configure: (inout OTLPConfiguration) -> Void = { _ in },
        _ body: @Sendable (any TestClientProtocol) async throws -> Void
    ) async throws {
        var configuration = OTLPConfiguration(port: 0)
        configure(&configuration)
        let receiver = OTLPReceiver(configuration: configuration, sink: sink, logger: Logger(label: "otlp-test"), warn: warnings.add)
        try await Application(router: receiver.makeRouter()).test(.router, body)
    }

    static let spanJSON = """
        {"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"checkout"}}]},"scopeSpans":[{"spans":[
          {"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"a001020304050607","name":"GET /","kind":2,"startTimeUnixNano":"1","endTimeUnixNano":"2"},
          {"traceId":"00","spanId":"a001020304050607","name":"bad","startTimeUnixNano":"1","endTimeUnixNano":"2"}]}]}]}
        """

    @Test("an export in JSON is handed on resource by resource, and a refused span is reported as a partial success")
    func storesAndReportsPartialSuccess() async throws {
        let sink = RecordingSink()
        try await Self.test(sink: sink) { client in
            try await client.execute(uri: "/v1/traces", method: .post, headers: Self.json, body: ByteBuffer(string: Self.spanJSON)) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentType] == "application/json")
                let text = String(buffer: response.body)
                #expect(text.contains("\"rejectedSpans\":\"1\""), "answer: \(text)")
            }
        }
        let (export, signal) = try #require(sink.received.first)
        #expect(signal == .traces)
        #expect(export.resources.first?.serviceName == "checkout")
        #expect(export.resources.first?.batch.spans.map(\.name) == ["GET /"])
    }

    @Test("a gzip body is inflated; one that inflates past the limit is 413 however small it is sent")
    func gzip() async throws {
        let sink = RecordingSink()
        var plain = ByteBuffer(string: Self.spanJSON)
        let compressed = try plain.compress(with: .gzip())
        var zeros = ByteBuffer(repeating: 0x20, count: 2 << 20)
        let bomb = try zeros.compress(with: .gzip())
        #expect(bomb.readableBytes < 64 << 10)
        try await Self.test(sink: sink, configure: { $0.maxBodyBytes = 1 << 20 }) { client in
            var headers = Self.json
            headers[.contentEncoding] = "gzip"
            try await client.execute(uri: "/v1/traces", method: .post, headers: headers, body: compressed) { #expect($0.status == .ok) }
            try await client.execute(uri: "/v1/traces", method: .post, headers: headers, body: bomb) { response in
                #expect(response.status == .contentTooLarge)
                #expect(String(buffer: response.body).contains("inflates past"))
            }
            headers[.contentEncoding] = "br"
            try await client.execute(uri: "/v1/traces", method: .post, headers: headers, body: compressed) { #expect($0.status == .unsupportedMediaType) }
        }
        #expect(sink.received.count == 1)
    }

    @Test("another content type is 415, a body that is not an export 400, one past the limit 413; each with a google.rpc.Status")
    func refusals() async throws {
        let sink = RecordingSink()
        try await Self.test(sink: sink, configure: { $0.maxBodyBytes = 1024 }) { client in
            try await client.execute(uri: "/v1/logs", method: .post, headers: [.contentType: "text/plain"], body: ByteBuffer(string: "hello")) { response in
                #expect(response.status == .unsupportedMediaType)
                #expect(String(buffer: response.body).contains("application/x-protobuf"))
            }
            try await client.execute(uri: "/v1/logs", method: .post, headers: Self.protobuf, body: ByteBuffer(bytes: [0x0A, 0x05, 0x01])) { response in
                #expect(response.status == .badRequest)
                let status = try Google_Rpc_Status(serializedBytes: Data(buffer: response.body))
                #expect(status.code == 3 && status.message.contains("middle of a field"))
            }
            try await client.execute(uri: "/v1/logs", method: .post, headers: Self.json, body: ByteBuffer(repeating: 0x20, count: 2048)) {
                #expect($0.status == .contentTooLarge)
            }
            try await client.execute(uri: "/v1/metrics", method: .post, headers: Self.protobuf, body: ByteBuffer()) { #expect($0.status == .ok) }
        }
        #expect(sink.received.isEmpty)
    }

    @Test("past the exports in flight the answer is 429 with Retry-After; a sink that cannot store says 503 with Retry-After")
    func shedsLoad() async throws {
        let (arrived, arrivedContinuation) = AsyncStream.makeStream(of: Void.self)
        let (release, releaseContinuation) = AsyncStream.makeStream(of: Void.self)
        let sink = RecordingSink(gate: (arrivedContinuation, release))
        try await Self.test(sink: sink, configure: { $0.maxConcurrentExports = 1 }) { client in
            async let first: HTTPResponse.Status = client.execute(uri: "/v1/traces", method: .post, headers: Self.json, body: ByteBuffer(string: Self.spanJSON)) {
                $0.status
            }
            for await _ in arrived { break }
            try await client.execute(uri: "/v1/traces", method: .post, headers: Self.json, body: ByteBuffer(string: Self.spanJSON)) { response in
                #expect(response.status == .tooManyRequests)
                #expect(response.headers[.retryAfter] == "1")
            }
            releaseContinuation.finish()
            #expect(try await first == .ok)
        }
        let unavailable = RecordingSink(outcome: .unavailable(retryAfterSeconds: 5, reason: "the history's disk is full"))
        try await Self.test(sink: unavailable) { client in
            try await client.execute(uri: "/v1/traces", method: .post, headers: Self.json, body: ByteBuffer(string: Self.spanJSON)) { response in
                #expect(response.status == .serviceUnavailable)
                #expect(response.headers[.retryAfter] == "5")
                #expect(String(buffer: response.body).contains("disk is full"))
            }
        }
    }

    @Test("with a token every export needs it as a bearer (401 otherwise)")
    func access() async throws {
        let sink = RecordingSink()
        try await Self.test(sink: sink, configure: { $0.token = "s3cret" }) { client in
            try await client.execute(uri: "/v1/traces", method: .post, headers: Self.json, body: ByteBuffer(string: Self.spanJSON)) { response in
                #expect(response.status == .unauthorized)
                #expect(String(buffer: response.body).contains("OTEL_EXPORTER_OTLP_HEADERS"))
            }
            var headers = Self.json
            headers[.authorization] = "Bearer s3cret"
            try await client.execute(uri: "/v1/traces", method: .post, headers: headers, body: ByteBuffer(string: Self.spanJSON)) { #expect($0.status == .ok) }
        }
        #expect(sink.received.count == 1)
    }

    @Test("an export of more messages than parleyd decodes at once is 413 before decoding; one that would take those in flight past theirs is 429")
    func messageLimits() async throws {
        let sink = RecordingSink()
        // The objects of spanJSON: the request, a resource's spans, its resource, one attribute and its value, a
        // scope's spans and two spans: 8.
        try await Self.test(sink: sink, configure: { $0.maxMessagesPerExport = 7 }) { client in
            try await client.execute(uri: "/v1/traces", method: .post, headers: Self.json, body: ByteBuffer(string: Self.spanJSON)) { response in
                #expect(response.status == .contentTooLarge)
                #expect(String(buffer: response.body).contains("holds 8 messages"))
            }
        }
        #expect(sink.received.isEmpty)

        let (arrived, arrivedContinuation) = AsyncStream.makeStream(of: Void.self)
        let (release, releaseContinuation) = AsyncStream.makeStream(of: Void.self)
        let held = RecordingSink(gate: (arrivedContinuation, release))
        try await Self.test(sink: held, configure: { $0.maxMessagesInFlight = 10 }) { client in
            async let first: HTTPResponse.Status = client.execute(uri: "/v1/traces", method: .post, headers: Self.json, body: ByteBuffer(string: Self.spanJSON)) {
                $0.status
            }
            for await _ in arrived { break }
            // 8 held by the first export, 8 more would be 16.
            try await client.execute(uri: "/v1/traces", method: .post, headers: Self.json, body: ByteBuffer(string: Self.spanJSON)) { response in
                #expect(response.status == .tooManyRequests)
                #expect(String(buffer: response.body).contains("decoding 10 messages"))
            }
            releaseContinuation.finish()
            #expect(try await first == .ok)
            // Given back once the first was stored.
            try await client.execute(uri: "/v1/traces", method: .post, headers: Self.json, body: ByteBuffer(string: Self.spanJSON)) { #expect($0.status == .ok) }
        }
    }

    @Test("each refusal is said once with its status, the client and the reason; text that is not UTF-8 is stored and said; 429 is not said")
    func refusalsAreSaid() async throws {
        let sink = RecordingSink()
        let warnings = Warnings()
        let notUTF8 = ByteBuffer(bytes: Array(#"{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"body":{"stringValue":"bad "#.utf8) + [0xC3, 0x28] + Array(#""}}]}]}]}"#.utf8))
        try await Self.test(sink: sink, warnings: warnings, configure: { $0.maxConcurrentExports = 0 }) { client in
            try await client.execute(uri: "/v1/traces", method: .post, headers: Self.json, body: ByteBuffer(string: Self.spanJSON)) {
                #expect($0.status == .tooManyRequests)
            }
        }
        #expect(warnings.all.isEmpty, "\(warnings.all)")
        try await Self.test(sink: sink, warnings: warnings) { client in
            try await client.execute(uri: "/v1/logs", method: .post, headers: [.contentType: "text/plain"], body: ByteBuffer(string: "hello")) {
                #expect($0.status == .unsupportedMediaType)
            }
            try await client.execute(uri: "/v1/logs", method: .post, headers: Self.json, body: notUTF8) { #expect($0.status == .ok) }
        }
        let lines = warnings.all
        #expect(lines.map(\.message) == ["OTLP export refused", "OTLP text that is not UTF-8 stored with U+FFFD in place of each bad sequence"])
        #expect(lines.first?.metadata["status"] == "415" && lines.first?.metadata["path"] == "/v1/logs")
        #expect(lines.first?.metadata["reason"]?.description.contains("text/plain") == true)
        #expect(lines.last?.metadata["texts"] == "1")
        #expect(sink.received.last?.0.resources.first?.batch.logs.first?.message == "bad \u{FFFD}(")
    }
}
