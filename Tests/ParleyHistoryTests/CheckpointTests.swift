import Foundation
import ParleyDebugger
@testable import ParleyHistory
import Testing

@Suite("History: WAL checkpoints off the writer")
struct CheckpointTests {
    /// Bytes of a file, 0 when there is none.
    static func bytes(_ path: String) -> Int64 {
        (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int64) ?? 0
    }

    /// Appends states of 16 KiB until about `mebibytes` MiB are recorded.
    static func fill(_ mebibytes: Int, in store: HistoryStore, session: Int64) async throws {
        let state = #"{"blob":"\#(String(repeating: "s", count: 16 << 10))"}"#
        for _ in 0..<(mebibytes * 64) { _ = try await store.append(record("a", state), to: session) }
    }

    static let roomy = RetentionLimits(maxEntries: 1_000_000, maxBytes: 1 << 30)

    @Test("the writer leaves checkpoints to the checkpointer: with it stopped, 10 MiB stay in the WAL; past 16 MiB the writer checkpoints itself, and the WAL stays near that")
    func writerCheckpointsOnlyPastTheBound() async throws {
        try await withStore(limits: Self.roomy) { store, _ in
            await store.checkpointer.stop()
            let session = try await store.beginSession(peerID: "p", appName: "App", kind: .parley)
            // 3 MiB of states, one transaction each: about 10 MiB of WAL (each commit also writes its index pages).
            try await Self.fill(3, in: store, session: session.id)
            // SQLite's own checkpoint would have copied the WAL into the file at every 4 MiB.
            #expect(Self.bytes(store.path) < 1 << 20, "\(Self.bytes(store.path)) bytes in the database file")
            #expect(Self.bytes(store.path + "-wal") > 8 << 20)

            var largestWAL: Int64 = 0
            for _ in 0..<4 {
                try await Self.fill(8, in: store, session: session.id)
                largestWAL = max(largestWAL, Self.bytes(store.path + "-wal"))
            }
            let bound = Checkpointer.walBytesBeforeWriterCheckpoints
            #expect(largestWAL < bound + (2 << 20), "a WAL of \(largestWAL) bytes")
            #expect(Self.bytes(store.path) > 30 << 20, "\(Self.bytes(store.path)) bytes in the database file")
        }
    }

    @Test("the checkpointer copies what the writer committed into the database file, and the writer then cuts the WAL back to 4 MiB")
    func checkpointerCopiesTheWAL() async throws {
        try await withStore(limits: Self.roomy) { store, _ in
            let session = try await store.beginSession(peerID: "p", appName: "App", kind: .parley)
            // About 10 MiB of WAL: below the writer's own bound, so only the checkpointer copies any of it.
            try await Self.fill(3, in: store, session: session.id)
            await store.checkpointer.caughtUp()
            // All but what was committed after the WAL last started again (fewer than 1 000 pages) is in the file.
            #expect(Self.bytes(store.path) > 1 << 20, "\(Self.bytes(store.path)) bytes in the database file")
            _ = try await store.append(record("a", "{}"), to: session.id)
            let wal = Self.bytes(store.path + "-wal")
            #expect(wal <= Int64(HistoryStore.walSizeLimit) + (64 << 10), "a WAL of \(wal) bytes")
            #expect(try await store.entries(session: session.id, limit: 1).total == 3 * 64 + 1)
        }
    }
}
