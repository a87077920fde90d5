import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import ParleyBlocking
import ParleyOTLP
import ParleyTelemetry
import ServiceLifecycle
import Synchronization

/// Sends every log record and span parleyd stores — from Swift apps and from OTLP exporters alike — on to another
/// OTLP/HTTP receiver (`otlpForward`: an OpenTelemetry Collector, Jaeger, Tempo, another parleyd), as protobuf
/// exports in batches, a `Service` of parleyd's group.
///
/// Storing never waits for it: ``enqueue(_:resource:)`` only adds to a bounded queue (``OTLPForwardQueue``: the
/// oldest records go first when it is full, counted), and one task sends from it, retrying with backoff by
/// OTLP/HTTP's rules (``OTLPForwardRetry``). parleyd says once when forwarding stops working, and once when it works
/// again; the counts are in `/metrics`.
final class OTLPForwarder: Service, Sendable {
    /// How long one export may take before it counts as failed.
    static let requestTimeout = TimeAmount.seconds(10)
    /// What parleyd gives queued records to leave when it stops.
    static let shutdownFlushTime = Duration.seconds(2)

    let url: URL
    private let headers: [OTLPForwardHeader]
    private let logger: Logger
    private let size: @Sendable (OTLPForwardQueue.Entry.Record) -> Int
    private let queue: Mutex<OTLPForwardQueue>
    private let retryPolicy: OTLPForwardRetry
    let counts = OTLPForwardCounts()
    /// Wakes the sending task when records arrive.
    private let arrivals = Doorbell()
    /// The resource attribute naming, in order, each parleyd that forwarded a resource's records: a parleyd that
    /// finds itself there has been sent back its own records (``cameBack(_:)``).
    static let forwardedByKey = "parley.forwarded_by"
    /// This process's name in ``forwardedByKey``: new at each start, since only a loop among running parleyds matters.
    let instance = UUID().uuidString.lowercased()
    /// Whether a loop has been reported: once per process is enough to act on.
    private let loopReported = Atomic<Bool>(false)

    init(
        url: URL, headers: [OTLPForwardHeader], logger: Logger, limits: OTLPForwardQueue.Limits = .init(),
        retry: OTLPForwardRetry = .init()
    ) {
        self.url = url
        self.headers = headers
        self.logger = logger
        self.queue = Mutex(OTLPForwardQueue(limits: limits))
        self.retryPolicy = retry
        self.size = { record in
            switch record {
            case .log(let log): DebuggerService.estimatedSize(of: log)
            case .span(let span): DebuggerService.estimatedSize(of: span)
            }
        }
    }

    /// Queues stored records to be sent under `resource`; never waits. What a full queue drops is counted.
    func enqueue(_ batch: TelemetryBatch, resource: TelemetryAttributes) {
        guard !batch.isEmpty else { return }
        var resource = resource
        resource[Self.forwardedByKey] = .array(Self.forwarders(of: resource).map(TelemetryValue.string) + [.string(instance)])
        let now = ContinuousClock.now
        let dropped = queue.withLock { $0.append(batch, resource: resource, now: now, size: size) }
        counts.dropped(logs: dropped.logs, spans: dropped.spans, reason: .queueFull)
        arrivals.ring()
    }

    /// Whether records an OTLP exporter sent under `resource` are this parleyd's own, forwarded back to it (two
    /// parleyds forwarding to each other, or through a collector that forwards here): they were stored when they
    /// first arrived, and are neither stored nor forwarded again. Counted as dropped for a loop; said once.
    func cameBack(_ resource: TelemetryAttributes, batch: TelemetryBatch) -> Bool {
        let path = Self.forwarders(of: resource)
        guard path.contains(instance) else { return false }
        counts.dropped(logs: batch.logs.count, spans: batch.spans.count, reason: .loop)
        if !loopReported.exchange(true, ordering: .relaxed) {
            logger.warning(
                "records this parleyd forwarded came back to it: a forwarding loop; they are not stored or forwarded again (counted in /metrics). Check the otlpForward of the receivers it forwards to",
                metadata: ["otlp-forward": "\(url.absoluteString)", "forwarded-by": "\(path.count) parleyd"])
        }
        return true
    }

    /// The parleyds a resource's records have passed through, oldest first.
    static func forwarders(of resource: TelemetryAttributes) -> [String] {
        guard case .array(let values)? = resource[forwardedByKey] else { return [] }
        return values.compactMap { if case .string(let name) = $0 { name } else { nil } }
    }

    /// Records waiting to be sent, by signal (a batch being sent is no longer counted).
    func queued(_ signal: OTLPSignal) -> Int { queue.withLock { $0.count(signal) } }

    /// The endpoint of a signal: the base URL's path with `/v1/traces` or `/v1/logs` added, as OpenTelemetry's SDKs
    /// treat `OTEL_EXPORTER_OTLP_ENDPOINT`.
    func endpoint(_ signal: OTLPSignal) -> String {
        var text = url.absoluteString
        while text.hasSuffix("/") { text.removeLast() }
        return text + "/v1/" + signal.rawValue
    }

    func run() async throws {
        var configuration = HTTPClient.Configuration()
        // The forwarder retries with a backoff of its own, and must see each failure to count it; the client's own
        // retries would hold a request until its deadline.
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.timeout.connect = .seconds(5)
        let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        logger.info("forwarding log records and spans", metadata: ["otlp-forward": "\(url.absoluteString)"])
        let interrupted = await cancelWhenGracefulShutdown {
            await self.sendUntilCancelled(client)
        }
        await flush(client, first: interrupted)
        try? await client.shutdown()
    }

    // MARK: - Sending

    /// Sends batches as they fall due until parleyd stops; returns the batch whose retries that interrupted.
    private func sendUntilCancelled(_ client: HTTPClient) async -> OTLPForwardQueue.Batch? {
        var retry = retryPolicy
        while !Task.isCancelled {
            guard let due = queue.withLock({ $0.nextDue() }) else {
                // Nothing queued: sleep until something is.
                await arrivals.wait()
                continue
            }
            if due.at > .now {
                // Until the batch is due, or until records arrive (they may fill a batch earlier).
                await sleep(until: due.at)
                continue
            }
            guard let batch = queue.withLock({ $0.takeBatch(due.signal) }) else { continue }
            if let interrupted = await send(batch, client, retry: &retry) { return interrupted }
        }
        return nil
    }

    /// Sends one batch until it is taken, refused, or its retries run out; returns it if parleyd stopped first.
    private func send(_ batch: OTLPForwardQueue.Batch, _ client: HTTPClient, retry: inout OTLPForwardRetry) async -> OTLPForwardQueue.Batch? {
        guard let body = await encode(batch) else { return nil }
        while true {
            let outcome = await attempt(body, signal: batch.signal, client)
            let (decision, report) = retry.after(outcome, now: .now)
            self.report(report, outcome: outcome)
            switch decision {
            case .sent(let rejected):
                counts.sent(batch.signal, batch.count - min(rejected, batch.count))
                if rejected > 0 { counts.dropped(batch.signal, min(rejected, batch.count), reason: .refused) }
                return nil
            case .giveUp(let exhausted):
                counts.dropped(batch.signal, batch.count, reason: exhausted ? .retriesExhausted : .refused)
                return nil
            case .retry(let delay):
                logger.debug("forwarding failed; retrying", metadata: ["in": "\(delay)", "records": "\(batch.count)"])
                do {
                    try await Task.sleep(for: delay)
                } catch {
                    // parleyd is stopping: the flush gives it one more try, first.
                    return batch
                }
            }
        }
    }

    /// The batch as a protobuf export request, encoded on the blocking pool (megabytes take milliseconds); nil, and
    /// the batch counted as dropped and said, when it cannot be.
    private func encode(_ batch: OTLPForwardQueue.Batch) async -> Data? {
        do {
            return try await BlockingPool.shared.run { try OTLPExportRequest.encode(batch.resources, signal: batch.signal) }
        } catch {
            counts.dropped(batch.signal, batch.count, reason: .refused)
            logger.warning("records not forwarded: \(error)", metadata: ["records": "\(batch.count)"])
            return nil
        }
    }

    /// One POST of an export; what came of it by OTLP/HTTP's rules.
    private func attempt(_ body: Data, signal: OTLPSignal, _ client: HTTPClient) async -> OTLPForwardRetry.Outcome {
        var request = HTTPClientRequest(url: endpoint(signal))
        request.method = .POST
        request.headers.add(name: "Content-Type", value: OTLPEncoding.protobuf.rawValue)
        request.headers.add(name: "User-Agent", value: "parleyd/\(Parleyd.version)")
        for header in headers { request.headers.add(name: header.name, value: header.value) }
        request.body = .bytes(ByteBuffer(bytes: body))
        let response: HTTPClientResponse
        let answer: ByteBuffer
        do {
            response = try await client.execute(request, timeout: Self.requestTimeout)
            answer = try await response.body.collect(upTo: 1 << 20)
        } catch {
            counts.failedRequest()
            return .retryable(reason: "\(error)", kind: "connection", retryAfter: nil)
        }
        let status = Int(response.status.code)
        if (200..<300).contains(status) {
            let partial = OTLPExportRequest.partialSuccess(ofResponse: Data(answer.readableBytesView), signal: signal)
            return .accepted(rejected: partial.rejected, message: partial.message)
        }
        counts.failedRequest()
        let text = String(decoding: answer.readableBytesView.prefix(512), as: UTF8.self)
        let reason = "\(status) \(response.status.reasonPhrase)" + (text.isEmpty ? "" : ": \(text)")
        switch status {
        case 429, 502, 503, 504:
            let retryAfter = response.headers.first(name: "Retry-After").flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }
            return .retryable(reason: reason, kind: "status \(status)", retryAfter: retryAfter.map { .seconds(max(0, $0)) })
        default:
            return .refused(reason: reason, kind: "status \(status)")
        }
    }

    private func report(_ report: OTLPForwardRetry.Report, outcome: OTLPForwardRetry.Outcome) {
        switch report {
        case .none:
            break
        case .failing(let reason):
            let what: String =
                if case .refused = outcome {
                    "the OTLP receiver refused forwarded records; they are dropped (counted in /metrics) until it takes them again; check otlpForward and otlpForwardHeaders"
                } else {
                    "cannot forward log records and spans to the OTLP receiver; retrying with backoff, and keeping the newest records meanwhile (the oldest are dropped past \(queue.withLock { $0.limits.maxRecords }) of each signal, counted in /metrics)"
                }
            logger.warning("\(what)", metadata: ["otlp-forward": "\(url.absoluteString)", "reason": "\(reason)"])
        case .recovered:
            logger.notice("forwarding log records and spans works again", metadata: ["otlp-forward": "\(url.absoluteString)"])
        }
    }

    /// Waits until `deadline`, or until records arrive.
    private func sleep(until deadline: ContinuousClock.Instant) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await Task.sleep(until: deadline) }
            group.addTask { await self.arrivals.wait() }
            await group.next()
            group.cancelAll()
        }
    }

    /// On stopping: the batch whose retries were interrupted, then what is queued, get one attempt each within
    /// ``shutdownFlushTime``; what does not get through is dropped, and said.
    private func flush(_ client: HTTPClient, first interrupted: OTLPForwardQueue.Batch?) async {
        let deadline = ContinuousClock.now + Self.shutdownFlushTime
        var lost = 0
        func finalAttempt(_ batch: OTLPForwardQueue.Batch) async {
            guard ContinuousClock.now < deadline else {
                counts.dropped(batch.signal, batch.count, reason: .retriesExhausted)
                lost += batch.count
                return
            }
            guard let body = await encode(batch) else { return }
            let outcome = await withDeadline(deadline) { await self.attempt(body, signal: batch.signal, client) }
            if case .accepted(let rejected, _)? = outcome {
                counts.sent(batch.signal, batch.count - min(rejected, batch.count))
                if rejected > 0 { counts.dropped(batch.signal, min(rejected, batch.count), reason: .refused) }
            } else {
                counts.dropped(batch.signal, batch.count, reason: .retriesExhausted)
                lost += batch.count
            }
        }
        if let interrupted { await finalAttempt(interrupted) }
        for signal in [OTLPSignal.logs, .traces] {
            while let batch = queue.withLock({ $0.takeBatch(signal) }) { await finalAttempt(batch) }
        }
        if lost > 0 {
            logger.warning(
                "parleyd stopped before every record was forwarded", metadata: ["otlp-forward": "\(url.absoluteString)", "records": "\(lost)"])
        }
    }

    private func withDeadline<T: Sendable>(_ deadline: ContinuousClock.Instant, _ operation: @escaping @Sendable () async -> T) async -> T? {
        await withTaskGroup(of: T?.self) { group in
            group.addTask { await operation() }
            group.addTask {
                try? await Task.sleep(until: deadline)
                return nil
            }
            defer { group.cancelAll() }
            return await group.next() ?? nil
        }
    }
}

/// What came of the forwarded records, for `/metrics`.
final class OTLPForwardCounts: Sendable {
    enum DropReason: String, CaseIterable, Sendable {
        /// The queue was full: the oldest made room.
        case queueFull = "queue-full"
        /// The receiver refused them (a status other than 429, 502, 503, 504; or a partial success).
        case refused
        /// Retried for as long as allowed (or parleyd stopped) without getting through.
        case retriesExhausted = "retries-exhausted"
        /// Forwarded back to this parleyd (``OTLPForwarder/cameBack(_:batch:)``).
        case loop
    }

    private struct Counts {
        var sent: [OTLPSignal: Int] = [:]
        var dropped: [OTLPSignal: [DropReason: Int]] = [:]
        var failedRequests = 0
    }

    /// Updated once per batch, read once per scrape: a lock costs nothing here.
    private let counts = Mutex(Counts())

    init() {}

    func sent(_ signal: OTLPSignal, _ count: Int) {
        counts.withLock { $0.sent[signal, default: 0] += count }
    }

    func dropped(_ signal: OTLPSignal, _ count: Int, reason: DropReason) {
        guard count > 0 else { return }
        counts.withLock { $0.dropped[signal, default: [:]][reason, default: 0] += count }
    }

    func dropped(logs: Int, spans: Int, reason: DropReason) {
        dropped(.logs, logs, reason: reason)
        dropped(.traces, spans, reason: reason)
    }

    func failedRequest() {
        counts.withLock { $0.failedRequests += 1 }
    }

    func sent(_ signal: OTLPSignal) -> Int { counts.withLock { $0.sent[signal] ?? 0 } }
    func dropped(_ signal: OTLPSignal, reason: DropReason) -> Int { counts.withLock { $0.dropped[signal]?[reason] ?? 0 } }
    var failedRequests: Int { counts.withLock { $0.failedRequests } }
}

/// Wakes one waiting task; a ring with nobody waiting wakes the next wait at once.
final class Doorbell: Sendable {
    private let state = Mutex<(rung: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, nil))

    init() {}

    func ring() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let waiter = state.waiter else {
                state.rung = true
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    /// Returns at the next ring (or at once after one nobody heard), or when the task is cancelled.
    func wait() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let now = state.withLock { state -> Bool in
                    if state.rung || Task.isCancelled {
                        state.rung = false
                        return true
                    }
                    state.waiter = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume()
        }
    }
}
