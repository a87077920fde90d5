import ParleyDebugger
import ParleyTelemetry
import Synchronization

/// An app's batch of log records and spans handed to ``HistoryStore/enqueueTelemetry(_:to:at:)``: what it became
/// once stored, for whoever waits.
public final class TelemetryAppend: Sendable {
    public typealias Stored = (logs: [StoredLogRecord], spans: [StoredSpan])

    private enum State {
        case waiting([CheckedContinuation<Result<Stored, HistoryStoreError>, Never>])
        case done(Result<Stored, HistoryStoreError>)
    }

    private let state = Mutex(State.waiting([]))

    init() {}

    init(_ result: Result<Stored, HistoryStoreError>) {
        state.withLock { $0 = .done(result) }
    }

    /// The batch's records numbered, in its order, once stored; or why none of them was.
    public func stored() async throws(HistoryStoreError) -> Stored {
        let result = await withCheckedContinuation { continuation in
            let done = state.withLock { state -> Result<Stored, HistoryStoreError>? in
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
        return try result.get()
    }

    func finish(_ result: Result<Stored, HistoryStoreError>) {
        let waiting = state.withLock { state -> [CheckedContinuation<Result<Stored, HistoryStoreError>, Never>] in
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
    struct Waiting: Sendable {
        let batch: TelemetryBatch
        let session: Int64
        let receivedMilliseconds: Int64
        let append: TelemetryAppend
    }

    /// Records one transaction takes, past its first batch: enough that a commit's cost is shared by thousands of
    /// rows, few enough that one transaction (and the WAL it grows before a checkpoint) stays short.
    static let recordsPerTransaction = 4096

    private var waiting: [Waiting] = []
    private var storing = false

    /// Adds a batch; true when no one is storing, and the caller must start.
    mutating func add(_ batch: Waiting) -> Bool {
        waiting.append(batch)
        guard !storing else { return false }
        storing = true
        return true
    }

    /// The next transaction's batches, oldest first: at least one, then as many as fit ``recordsPerTransaction``.
    /// Empty when none waits, and then storing has stopped.
    mutating func next() -> [Waiting] {
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
