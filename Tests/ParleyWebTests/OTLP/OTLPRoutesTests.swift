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

    static func test(
        sink: RecordingSink, configure: (inout OTLPConfiguration) -> Void = { _ in }, _ body: @Sendable (any TestClientProtocol) async throws -> Void
    ) async throws {
        var configuration = OTLPConfiguration(port: 0)
        configure(&configuration)
        let receiver = OTLPReceiver(configuration: configuration, sink: sink, logger: Logger(label: "otlp-test"))
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
}
