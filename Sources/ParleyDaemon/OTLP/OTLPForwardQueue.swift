import ParleyOTLP
import ParleyTelemetry

/// What parleyd holds of the records it forwards (`otlpForward`) until they leave: one queue per signal, bounded in
/// records and in bytes, the oldest dropped (and counted) to make room, so that a receiver that is slow or away costs
/// a bounded amount of memory and never holds up the history. Batches leave when one is full or when the oldest
/// record has waited ``Limits/flushDelay``. A plain value: the forwarder keeps it under a lock, and tests drive it
/// with instants of their own.
struct OTLPForwardQueue {
    struct Limits: Sendable {
        /// Records held per signal, at most.
        var maxRecords = 20_000
        /// Estimated bytes held per signal, at most.
        var maxBytes = 32 << 20
        /// Records in one export, at most (OpenTelemetry's batch processors send 512).
        var batchRecords = 512
        /// Estimated bytes in one export, at most (at least one record is sent, whatever its size): well within the
        /// 16 MiB a parleyd receiver takes, and the 4 MiB of a Collector's default gRPC limit.
        var batchBytes = 4 << 20
        /// How long a record waits for others to fill its batch, at most.
        var flushDelay = Duration.seconds(1)
    }

    /// One record, with the resource it came under and its estimated size.
    struct Entry {
        enum Record {
            case log(LogRecord)
            case span(SpanRecord)
        }
        var record: Record
        var resource: TelemetryAttributes
        var bytes: Int
        var enqueued: ContinuousClock.Instant
    }

    /// Records of one signal taken to be sent, grouped by resource in the order they came.
    struct Batch {
        var signal: OTLPSignal
        var resources: [OTLPExportRequest.Resource]
        var count: Int
    }

    /// One signal's records, oldest first, as a ring of entries (`head` the oldest; the array is compacted once
    /// half of it has been taken).
    private struct Lane {
        var entries: [Entry] = []
        var head = 0
        var bytes = 0

        var count: Int { entries.count - head }
        var oldest: Entry? { head < entries.count ? entries[head] : nil }

        mutating func removeFirst() -> Entry {
            let entry = entries[head]
            head += 1
            bytes -= entry.bytes
            if head > 1024 && head * 2 > entries.count {
                entries.removeFirst(head)
                head = 0
            }
            return entry
        }
    }

    let limits: Limits
    private var logs = Lane()
    private var spans = Lane()

    init(limits: Limits = Limits()) {
        self.limits = limits
    }

    func count(_ signal: OTLPSignal) -> Int { lane(signal).count }

    private func lane(_ signal: OTLPSignal) -> Lane { signal == .logs ? logs : spans }

    private mutating func withLane<T>(_ signal: OTLPSignal, _ body: (inout Lane) -> T) -> T {
        signal == .logs ? body(&logs) : body(&spans)
    }

    /// Adds a stored batch's records under `resource`; returns how many of each signal were dropped to make room
    /// (the oldest first; a record alone past ``Limits/maxBytes`` is dropped itself).
    mutating func append(
        _ batch: TelemetryBatch, resource: TelemetryAttributes, now: ContinuousClock.Instant,
        size: (Entry.Record) -> Int
    ) -> (logs: Int, spans: Int) {
        // The resource is shared by the batch's records (one copy in memory): each carries its share of its size.
        let share = batch.isEmpty ? 0 : Self.estimatedSize(of: resource) / batch.count
        let dropped = (
            logs: add(batch.logs.map(Entry.Record.log), to: .logs, resource: resource, share: share, now: now, size: size),
            spans: add(batch.spans.map(Entry.Record.span), to: .traces, resource: resource, share: share, now: now, size: size)
        )
        return dropped
    }

    private mutating func add(
        _ records: [Entry.Record], to signal: OTLPSignal, resource: TelemetryAttributes, share: Int, now: ContinuousClock.Instant,
        size: (Entry.Record) -> Int
    ) -> Int {
        let limits = self.limits
        return withLane(signal) { lane in
            var dropped = 0
            for record in records {
                let entry = Entry(record: record, resource: resource, bytes: size(record) + share, enqueued: now)
                guard entry.bytes <= limits.maxBytes else {
                    dropped += 1
                    continue
                }
                while lane.count >= limits.maxRecords || lane.bytes + entry.bytes > limits.maxBytes {
                    _ = lane.removeFirst()
                    dropped += 1
                }
                lane.entries.append(entry)
                lane.bytes += entry.bytes
            }
            return dropped
        }
    }

    /// When the next batch is due, and of which signal: at once for a full batch, else when its oldest record has
    /// waited ``Limits/flushDelay``; the signal due first. Nil when both queues are empty.
    func nextDue() -> (signal: OTLPSignal, at: ContinuousClock.Instant)? {
        [OTLPSignal.logs, .traces].compactMap { signal -> (OTLPSignal, ContinuousClock.Instant)? in
            let lane = self.lane(signal)
            guard let oldest = lane.oldest else { return nil }
            if lane.count >= limits.batchRecords || lane.bytes >= limits.batchBytes { return (signal, oldest.enqueued) }
            return (signal, oldest.enqueued + limits.flushDelay)
        }.min { $0.1 < $1.1 }
    }

    /// Takes the oldest records of `signal`, up to a batch's limits (at least one), grouped by resource; nil when
    /// there are none.
    mutating func takeBatch(_ signal: OTLPSignal) -> Batch? {
        let limits = self.limits
        return withLane(signal) { lane in
            guard lane.count > 0 else { return nil }
            var resources: [OTLPExportRequest.Resource] = []
            var count = 0
            var bytes = 0
            while let next = lane.oldest, count < limits.batchRecords, count == 0 || bytes + next.bytes <= limits.batchBytes {
                let entry = lane.removeFirst()
                count += 1
                bytes += entry.bytes
                // Consecutive records of one resource share one entry of the request (the common case: a batch an
                // app sent); a resource seen again later gets another, which OTLP allows.
                if resources.last?.attributes != entry.resource {
                    resources.append(OTLPExportRequest.Resource(attributes: entry.resource, batch: TelemetryBatch()))
                }
                switch entry.record {
                case .log(let record): resources[resources.count - 1].batch.logs.append(record)
                case .span(let record): resources[resources.count - 1].batch.spans.append(record)
                }
            }
            return Batch(signal: signal, resources: resources, count: count)
        }
    }

    static func estimatedSize(of attributes: TelemetryAttributes) -> Int {
        attributes.reduce(0) { $0 + 16 + $1.key.utf8.count + $1.value.description.utf8.count }
    }
}

/// What happens to a batch after an attempt to send it, by OTLP/HTTP's rules: retried with exponential backoff
/// (with jitter) after 429, 502, 503, 504 or no answer at all, after `Retry-After` when the receiver gives one, for
/// at most ``maxElapsed``; given up at once after any other refusal. Also follows whether forwarding works, so that
/// parleyd says once when it stops working and once when it works again, not once per batch.
struct OTLPForwardRetry {
    /// An attempt's outcome.
    enum Outcome: Sendable, Equatable {
        /// Taken; `rejected` of its records refused all the same (OTLP's partial success).
        case accepted(rejected: Int, message: String?)
        /// Worth trying again: no connection, a timeout, 429, 502, 503, 504.
        case retryable(reason: String, kind: String, retryAfter: Duration?)
        /// Refused for good: any other status.
        case refused(reason: String, kind: String)
    }

    enum Decision: Sendable, Equatable {
        case sent(rejected: Int)
        case retry(after: Duration)
        /// Give the batch up: `exhausted` after retries, else refused.
        case giveUp(exhausted: Bool)
    }

    /// What to tell the operator about this attempt, besides the counts.
    enum Report: Sendable, Equatable {
        case none
        /// Forwarding has stopped working, or fails in a new way.
        case failing(reason: String)
        /// It works again after failing.
        case recovered
    }

    var initialDelay = Duration.seconds(1)
    var maximumDelay = Duration.seconds(30)
    /// The longest a batch is retried, from its first failure.
    var maxElapsed = Duration.seconds(300)
    /// The longest `Retry-After` obeyed.
    var maximumRetryAfter = Duration.seconds(60)
    /// Scales each backoff delay (0.8 – 1.2 at random by default, so that parleyds restarted together spread out).
    var jitter: @Sendable (Duration) -> Duration = { $0 * Double.random(in: 0.8...1.2) }

    /// Failed attempts of the batch being sent.
    private(set) var attempts = 0
    private var firstFailure: ContinuousClock.Instant?
    /// The kind of the failure last reported (`connection`, `status 401`); nil while forwarding works.
    private(set) var failingKind: String?

    /// Decides what becomes of the current batch after `outcome`, and what to report.
    mutating func after(_ outcome: Outcome, now: ContinuousClock.Instant) -> (Decision, Report) {
        switch outcome {
        case .accepted(let rejected, _):
            attempts = 0
            firstFailure = nil
            let report: Report = failingKind == nil ? .none : .recovered
            failingKind = nil
            return (.sent(rejected: rejected), report)
        case .retryable(let reason, let kind, let retryAfter):
            let report = failing(kind, reason)
            attempts += 1
            let since = firstFailure ?? now
            firstFailure = since
            let backoff = min(maximumDelay, initialDelay * Double(1 << min(attempts - 1, 30)))
            let delay = retryAfter.map { min($0, maximumRetryAfter) } ?? jitter(backoff)
            guard now + delay - since <= maxElapsed else {
                attempts = 0
                firstFailure = nil
                return (.giveUp(exhausted: true), report)
            }
            return (.retry(after: delay), report)
        case .refused(let reason, let kind):
            attempts = 0
            firstFailure = nil
            return (.giveUp(exhausted: false), failing(kind, reason))
        }
    }

    private mutating func failing(_ kind: String, _ reason: String) -> Report {
        defer { failingKind = kind }
        return failingKind == kind ? .none : .failing(reason: reason)
    }
}
