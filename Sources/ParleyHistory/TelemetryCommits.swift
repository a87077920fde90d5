import ParleyDebugger
import ParleyTelemetry
import Synchronization

/// An app's batch of log records and spans handed to ``HistoryStore/enqueueTelemetry(_:to:at:)``: what it became
/// once stored, for whoever waits.
public final class TelemetryAppend: Sendable {
    public typealias Stored = (logs: [StoredLogRecord], spans: [StoredSpan])
    /// The ids the batch's log records and spans were stored under, in its order.
    typealias IDs = (logs: [Int64], spans: [Int64])

    private enum State {
        case waiting([CheckedContinuation<Result<IDs, HistoryStoreError>, Never>])
        case done(Result<IDs, HistoryStoreError>)
    }

    public let batch: TelemetryBatch
    /// The session the batch is stored in.
    public let session: Int64
    /// When parleyd received it, in milliseconds since 1970: each record's `received`, the retention order.
    let receivedMilliseconds: Int64
    private let state: Mutex<State>

    init(batch: TelemetryBatch, session: Int64, receivedMilliseconds: Int64) {
        self.batch = batch
        self.session = session
        self.receivedMilliseconds = receivedMilliseconds
        // An empty batch is stored as soon as it exists: nothing of it goes to the writer.
        state = Mutex(batch.isEmpty ? .done(.success(([], []))) : .waiting([]))
    }

    /// The batch's records numbered, in its order, once stored; or why none of them was.
    public func stored() async throws(HistoryStoreError) -> Stored {
        let result = await withCheckedContinuation { continuation in
            let done = state.withLock { state -> Result<IDs, HistoryStoreError>? in
                switch state {
                case .waiting(var waiting):
                    waiting.append(continuation)
                    state = .waiting(waiting)
                    return nil
                case .done(let result):
                    return result
                }
            }
            if let done { continuation.resume(returning: done) }
        }
        // Numbered here, by whoever waits, rather than by the store: its writer goes on to the next transaction.
        let ids = try result.get()
        return (
            zip(ids.logs, batch.logs).map { StoredLogRecord(id: $0, session: session, record: $1) },
            zip(ids.spans, batch.spans).map { StoredSpan(id: $0, session: session, span: $1) }
        )
    }

    func finish(_ result: Result<IDs, HistoryStoreError>) {
        let waiting = state.withLock { state -> [CheckedContinuation<Result<IDs, HistoryStoreError>, Never>] in
            guard case .waiting(let waiting) = state else { return [] }
            state = .done(result)
            return waiting
        }
        for continuation in waiting { continuation.resume(returning: result) }
    }
}

/// Batches waiting for the store's one writer, taken several to a transaction (group commit).
///
/// A transaction costs more than its rows: its commit writes every page it dirtied to the WAL, and the full-text
/// index flushes its segment. Batches that arrive while the writer is busy with others are stored together in the
/// next transaction, so the busier parleyd is, the fewer commits each record pays for; a batch that arrives with the
/// writer idle is stored at once, alone. Batches are stored in the order they were enqueued.
struct TelemetryCommits: Sendable {
    /// Records one transaction takes, past its first batch: enough that a commit's cost is shared by thousands of
    /// rows, few enough that one transaction (and the WAL it grows before a checkpoint) stays short.
    static let recordsPerTransaction = 4096

    private var waiting: [TelemetryAppend] = []
    private var storing = false
    /// The task storing what waits, the latest one started: ``HistoryStore/close()`` waits for it.
    var writer: Task<Void, Never>?

    /// Adds a batch; true when no one is storing, and the caller must start.
    mutating func add(_ batch: TelemetryAppend) -> Bool {
        waiting.append(batch)
        guard !storing else { return false }
        storing = true
        return true
    }

    /// The next transaction's batches, oldest first: at least one, then as many as fit ``recordsPerTransaction``.
    /// Empty when none waits, and then storing has stopped.
    mutating func next() -> [TelemetryAppend] {
        guard let first = waiting.first else {
            storing = false
            return []
        }
        var count = 1
        var records = first.batch.count
        while count < waiting.count, records + waiting[count].batch.count <= Self.recordsPerTransaction {
            records += waiting[count].batch.count
            count += 1
        }
        defer { waiting.removeFirst(count) }
        return Array(waiting.prefix(count))
    }
}
