import Foundation
@testable import ParleyDaemon
import ParleyOTLP
import ParleyTelemetry
import Testing

/// The forwarder's queue and its retry rules as plain values, driven with instants of the test's own: no socket,
/// no clock.
@Suite("parleyd's forwarding queue and retries")
struct OTLPForwardQueueTests {
    static let start = ContinuousClock.now
    static let app: TelemetryAttributes = ["service.name": .string("Listr")]
    static let other: TelemetryAttributes = ["service.name": .string("checkout")]

    static func logs(_ messages: [String]) -> TelemetryBatch {
        TelemetryBatch(logs: messages.map { LogRecord(time: UnixNanos(1), severity: .info, label: "test", message: $0) })
    }

    static func span(_ name: String) -> SpanRecord {
        SpanRecord(traceID: .random(), spanID: .random(), name: name, start: UnixNanos(1), end: UnixNanos(2))
    }

    /// Each record counts 100 bytes; the resource's share of a batch is left out.
    static func queue(_ limits: OTLPForwardQueue.Limits) -> OTLPForwardQueue {
        OTLPForwardQueue(limits: limits)
    }

    static func append(_ queue: inout OTLPForwardQueue, _ batch: TelemetryBatch, resource: TelemetryAttributes = [:], at offset: Duration = .zero) -> (logs: Int, spans: Int) {
        queue.append(batch, resource: resource, now: start + offset) { _ in 100 }
    }

    static func messages(_ batch: OTLPForwardQueue.Batch?) -> [String] {
        batch?.resources.flatMap { $0.batch.logs.map(\.message) } ?? []
    }

    @Test("a full queue drops its oldest records to take new ones, counting them; the other signal's queue is untouched")
    func dropsOldest() {
        var queue = Self.queue(.init(maxRecords: 3))
        #expect(Self.append(&queue, Self.logs(["1", "2"])) == (0, 0))
        #expect(Self.append(&queue, TelemetryBatch(logs: Self.logs(["3", "4", "5"]).logs, spans: [Self.span("a")])) == (2, 0))
        #expect(queue.count(.logs) == 3 && queue.count(.traces) == 1)
        #expect(Self.messages(queue.takeBatch(.logs)) == ["3", "4", "5"])
        #expect(queue.count(.logs) == 0 && queue.count(.traces) == 1)
        #expect(queue.takeBatch(.logs) == nil)
    }

    @Test("the byte bound drops the oldest to make room; a record larger than the whole bound is dropped itself")
    func byteBound() {
        var queue = Self.queue(.init(maxBytes: 250))
        _ = Self.append(&queue, Self.logs(["1", "2"]))
        #expect(Self.append(&queue, Self.logs(["3"])) == (1, 0))
        #expect(Self.messages(queue.takeBatch(.logs)) == ["2", "3"])
        var tiny = Self.queue(.init(maxBytes: 50))
        #expect(Self.append(&tiny, Self.logs(["too big"])) == (1, 0))
        #expect(tiny.count(.logs) == 0)
    }

    @Test("a batch is due when its oldest record has waited the flush delay, at once when full; the signal due first comes first")
    func due() {
        var queue = Self.queue(.init(batchRecords: 3, flushDelay: .seconds(1)))
        #expect(queue.nextDue() == nil)
        _ = Self.append(&queue, TelemetryBatch(spans: [Self.span("a")]))
        _ = Self.append(&queue, Self.logs(["1"]), at: .milliseconds(300))
        #expect(queue.nextDue()?.signal == .traces)
        #expect(queue.nextDue()?.at == Self.start + .seconds(1))
        _ = Self.append(&queue, Self.logs(["2", "3"]), at: .milliseconds(500))
        // Three log records fill a batch: due since its oldest came, before the lone span.
        #expect(queue.nextDue()?.signal == .logs)
        #expect(queue.nextDue()?.at == Self.start + .milliseconds(300))
    }

    @Test("a batch holds at most batchRecords records and batchBytes bytes, but always one; consecutive records of one resource share an entry")
    func batchLimits() {
        // Each record is 100 bytes and its share of its resource's 33 or 36: 133 for "1", 118 for "2" and "3", 108 for the rest.
        var queue = Self.queue(.init(batchRecords: 3, batchBytes: 260))
        _ = Self.append(&queue, Self.logs(["1"]), resource: Self.app)
        _ = Self.append(&queue, Self.logs(["2", "3"]), resource: Self.other)
        _ = Self.append(&queue, Self.logs(["4", "5", "6", "7"]), resource: Self.app)
        let first = queue.takeBatch(.logs)
        #expect(Self.messages(first) == ["1", "2"], "260 bytes hold 133 + 118")
        #expect(first?.resources.map(\.attributes) == [Self.app, Self.other])
        #expect(first?.count == 2 && first?.signal == .logs)
        #expect(Self.messages(queue.takeBatch(.logs)) == ["3", "4"])

        var large = Self.queue(.init(batchBytes: 50))
        _ = Self.append(&large, Self.logs(["a", "b"]))
        #expect(Self.messages(large.takeBatch(.logs)) == ["a"], "a record larger than a batch still leaves, alone")
    }

    @Test("many batches taken one after another come out whole and in order (the queue compacts as it goes)")
    func longRun() {
        var queue = Self.queue(.init(maxRecords: 5000, batchRecords: 512))
        let sent = (0..<4000).map(String.init)
        for chunk in stride(from: 0, to: sent.count, by: 7) {
            _ = Self.append(&queue, Self.logs(Array(sent[chunk..<min(chunk + 7, sent.count)])))
        }
        var received: [String] = []
        while let batch = queue.takeBatch(.logs) { received += Self.messages(batch) }
        #expect(received == sent)
    }

    // MARK: - Retries

    static func retry() -> OTLPForwardRetry {
        var retry = OTLPForwardRetry()
        retry.jitter = { $0 }
        return retry
    }

    static let unavailable = OTLPForwardRetry.Outcome.retryable(reason: "503 Service Unavailable", kind: "status 503", retryAfter: nil)
    static let refusedConnection = OTLPForwardRetry.Outcome.retryable(reason: "connection refused", kind: "connection", retryAfter: nil)

    @Test("a retryable failure is tried again after 1, 2, 4, 8 … s, at most 30 s apart; Retry-After is obeyed up to 60 s")
    func backoff() {
        var retry = Self.retry()
        var delays: [Duration] = []
        var now = Self.start
        for _ in 0..<7 {
            guard case .retry(let delay) = retry.after(Self.refusedConnection, now: now).0 else {
                Issue.record("not retried")
                return
            }
            delays.append(delay)
            now += delay
        }
        #expect(delays == [1, 2, 4, 8, 16, 30, 30].map { Duration.seconds($0) })
        #expect(retry.after(.retryable(reason: "429", kind: "status 429", retryAfter: .seconds(7)), now: now).0 == .retry(after: .seconds(7)))
        #expect(retry.after(.retryable(reason: "429", kind: "status 429", retryAfter: .seconds(3600)), now: now).0 == .retry(after: .seconds(60)))
        // Taken at last: the next failure starts from one second again.
        #expect(retry.after(.accepted(rejected: 0, message: nil), now: now).0 == .sent(rejected: 0))
        #expect(retry.after(Self.unavailable, now: now).0 == .retry(after: .seconds(1)))
    }

    @Test("a batch is given up once retrying would take it past five minutes from its first failure")
    func exhausted() {
        var retry = Self.retry()
        var now = Self.start
        var attempts = 0
        while case .retry(let delay) = retry.after(Self.unavailable, now: now).0 {
            attempts += 1
            now += delay
        }
        #expect(now - Self.start == .seconds(271))
        #expect(attempts == 13, "1+2+4+8+16+30×8 = 271 s; after the fourteenth failure the next try would come at 301 s")
        // The next batch gets its own five minutes.
        #expect(retry.after(Self.unavailable, now: now).0 == .retry(after: .seconds(1)))
    }

    @Test("any other refusal gives the batch up at once, without retrying")
    func refused() {
        var retry = Self.retry()
        let (decision, _) = retry.after(.refused(reason: "401 Unauthorized", kind: "status 401"), now: Self.start)
        #expect(decision == .giveUp(exhausted: false))
        #expect(retry.attempts == 0)
    }

    @Test("parleyd is told once when forwarding fails, again only when it fails another way, and once when it works again")
    func reports() {
        var retry = Self.retry()
        #expect(retry.after(.accepted(rejected: 0, message: nil), now: Self.start).1 == .none)
        #expect(retry.after(Self.refusedConnection, now: Self.start).1 == .failing(reason: "connection refused"))
        #expect(retry.after(Self.refusedConnection, now: Self.start).1 == .none)
        #expect(retry.after(Self.refusedConnection, now: Self.start).1 == .none)
        #expect(retry.after(Self.unavailable, now: Self.start).1 == .failing(reason: "503 Service Unavailable"))
        #expect(retry.after(.accepted(rejected: 2, message: "bad ids"), now: Self.start) == (.sent(rejected: 2), .recovered))
        #expect(retry.after(.accepted(rejected: 0, message: nil), now: Self.start).1 == .none)
        #expect(retry.failingKind == nil)
    }
}
