import Foundation
import ParleyDebugger
@testable import ParleyHistory
import ParleyTelemetry
import Testing

@Suite("History: batches stored several to a transaction")
struct TelemetryCommitsTests {
    static func waiting(_ records: Int, session: Int64 = 1) -> TelemetryAppend {
        TelemetryAppend(batch: TelemetryBatch(logs: (0..<records).map { log(Double($0)) }), session: session, receivedMilliseconds: 0)
    }

    @Test("the first batch starts storing; those that come meanwhile wait and are taken together, oldest first, up to 4 096 records but at least one")
    func grouping() {
        var commits = TelemetryCommits()
        func add(_ records: Int, session: Int64) -> Bool { commits.add(Self.waiting(records, session: session)) }
        func next() -> [Int64] { commits.next().map(\.session) }
        let starts = add(512, session: 1)
        #expect(starts)
        let first = next()
        #expect(first == [1])
        // The writer is busy with the first: these wait.
        let started = (2...10).map { add(512, session: Int64($0)) }
        #expect(started.allSatisfy { !$0 })
        let (second, third) = (next(), next())
        #expect(second == [2, 3, 4, 5, 6, 7, 8, 9] && third == [10])
        // A batch larger than a transaction's share is taken alone.
        let added = [add(4_000, session: 11), add(200, session: 12)]
        let (large, small) = (next(), next())
        #expect(added == [false, false] && large == [11] && small == [12])
        // Nothing waits: storing stops, and the next batch starts it again.
        let none = next()
        let again = add(1, session: 13)
        #expect(none.isEmpty && again)
    }

    @Test("batches enqueued back to back are stored in that order; one for a session that has ended is refused alone, and the others are kept")
    func outcomesPerBatch() async throws {
        try await withStore { store, _ in
            let open = try await store.beginSession(peerID: "a-1", appName: "Listr", kind: .parley)
            let ended = try await store.beginSession(peerID: "b-2", appName: "Other", kind: .parley)
            _ = try await store.appendTelemetry(TelemetryBatch(logs: [log(0)]), to: ended.id)
            _ = try await store.endSession(ended.id)
            let appends = [
                store.enqueueTelemetry(TelemetryBatch(logs: [log(1, .info, "first"), log(2, .info, "second")]), to: open.id),
                store.enqueueTelemetry(TelemetryBatch(logs: [log(3, .info, "too late")]), to: ended.id),
                store.enqueueTelemetry(TelemetryBatch(logs: [log(4, .info, "third")], spans: [span(4)]), to: open.id),
                store.enqueueTelemetry(TelemetryBatch(), to: ended.id),
            ]
            let first = try await appends[0].stored()
            await #expect(throws: HistoryStoreError.sessionEnded(ended.id)) { try await appends[1].stored() }
            let third = try await appends[2].stored()
            #expect(try await appends[3].stored().logs.isEmpty)
            #expect(first.logs.map(\.record.message) == ["first", "second"] && third.logs.map(\.record.message) == ["third"])
            #expect(first.logs.map(\.id) == [first.logs[0].id, first.logs[0].id + 1] && third.logs[0].id == first.logs[1].id + 1)
            #expect(third.spans.count == 1)
            let stored = try await store.logs(LogQuery(session: open.id)).items.map(\.record.message)
            #expect(stored == ["first", "second", "third"])
            // Waiting again gives the same answer.
            #expect(try await appends[2].stored().logs.map(\.id) == third.logs.map(\.id))
        }
    }

    @Test("closing the store waits for the batches already enqueued: each is answered, and all are in the history when it opens again")
    func closeWaitsForTheWriter() async throws {
        try await withTemporaryDirectory { directory in
            let store = try await HistoryStore.open(directory: directory, limits: .default)
            let session = try await store.beginSession(peerID: "a-1", appName: "Listr", kind: .parley)
            // Enough that the writer is still storing them, several transactions' worth, when close() is called.
            let appends = (0..<40).map { number in
                store.enqueueTelemetry(TelemetryBatch(logs: (0..<500).map { log(Double(number * 500 + $0)) }), to: session.id)
            }
            try await store.close()
            for append in appends { #expect(try await append.stored().logs.count == 500) }
            let reopened = try await HistoryStore.open(directory: directory, limits: .default)
            #expect(try await reopened.logs(LogQuery(session: session.id)).total == 40 * 500)
            try await reopened.close()
        }
    }

    @Test("in one transaction, a batch whose rows SQLite refuses is refused alone, with SQLite's words; the batches before and after it are stored")
    func refusedRowsInAGroup() async throws {
        try await withStore { store, _ in
            let session = try await store.beginSession(peerID: "a-1", appName: "Listr", kind: .parley)
            // On the writer's connection only: a record with this message is refused by SQLite itself.
            try await store.pool.writeWithoutTransaction { db in
                try db.execute(
                    sql: "CREATE TEMP TRIGGER poison BEFORE INSERT ON logRecord WHEN NEW.message = 'poison' BEGIN SELECT RAISE(ABORT, 'poisoned record'); END")
            }
            let group = [
                TelemetryAppend(batch: TelemetryBatch(logs: [log(1, .info, "before")]), session: session.id, receivedMilliseconds: 0),
                TelemetryAppend(batch: TelemetryBatch(logs: [log(2, .info, "kept back"), log(3, .info, "poison")]), session: session.id, receivedMilliseconds: 0),
                TelemetryAppend(batch: TelemetryBatch(logs: [log(4, .info, "after")], spans: [span(4)]), session: session.id, receivedMilliseconds: 0),
            ]
            await store.store(group)
            #expect(try await group[0].stored().logs.map(\.record.message) == ["before"])
            do throws(HistoryStoreError) {
                _ = try await group[1].stored()
                Issue.record("the poisoned batch was stored")
            } catch {
                guard case .database(_, let failure) = error else { throw error }
                #expect(failure.message.contains("poisoned record"))
            }
            #expect(try await group[2].stored().spans.count == 1)
            // Nothing of the refused batch is left, not even its first record; the totals count what was kept.
            #expect(try await store.logs(LogQuery(session: session.id)).items.map(\.record.message) == ["before", "after"])
            #expect(try await store.totals().entries == 3)
        }
    }

    @Test("batches of two apps stored in one transaction are found by their words, counted in the totals, and their spans summarized by trace")
    func oneTransactionIndexed() async throws {
        try await withStore { store, _ in
            let listr = try await store.beginSession(peerID: "a-1", appName: "Listr", kind: .parley)
            let server = try await store.beginSession(peerID: "b-2", appName: "Server", kind: .parley)
            let trace = TraceID.random()
            let group = [
                TelemetryAppend(batch: TelemetryBatch(logs: [log(1, .info, "saved the list")], spans: [span(1, trace: trace)]), session: listr.id, receivedMilliseconds: 0),
                TelemetryAppend(batch: TelemetryBatch(logs: [log(2, .info, "served the list"), log(3, .info, "cannot reach")]), session: server.id, receivedMilliseconds: 0),
                TelemetryAppend(batch: TelemetryBatch(spans: [span(4, trace: trace), span(5)]), session: server.id, receivedMilliseconds: 0),
            ]
            await store.store(group)
            for append in group { _ = try await append.stored() }
            func found(_ text: String) async throws -> [String] { try await store.logs(LogQuery(text: text)).items.map(\.record.message) }
            #expect(try await found("list") == ["saved the list", "served the list"])
            #expect(try await found("cannot reach") == ["cannot reach"])
            #expect(try await store.totals().entries == 6)
            let traces = try await store.traces(limit: 10)
            #expect(traces.count == 2)
            #expect(traces.first { $0.traceID == trace }?.spanCount == 2 && traces.first { $0.traceID == trace }?.sessions == [listr.id, server.id])
        }
    }
}
