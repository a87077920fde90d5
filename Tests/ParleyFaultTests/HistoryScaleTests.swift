import Foundation
import NIOCore
import ParleyDebugger
import ParleyHistory
import ParleyTestSupport
import Testing

/// The history at scale: a gigabyte of states. One of the load tests (serialized with them, after the main
/// suite): validating and writing a gigabyte keeps both cores busy for a while, and the main suite's hundreds of
/// concurrent tests then waited seconds for an event loop; beside the 200-peer load test, its local subscriber
/// fell behind.
extension FaultTests {
    @Test("1 000 entries of 1 MB states are listed and paged completely and in order")
    func thousandLargeEntries() async throws {
        try await withScratchStore { store in
            let session = try await store.beginSession(peerID: "big", appName: "App", kind: .parley)
            let state = ByteBuffer(string: #"{"blob":""# + String(repeating: "m", count: 1_000_000 - 11) + #""}"#)
            #expect(state.readableBytes == 1_000_000)
            var sequences: [Int64] = []
            for index in 0..<1000 {
                let entry = try await store.append(StateRecord(action: "change \(index)", state: state), to: session.id)
                sequences.append(entry.sequence)
            }
            let all = try await store.entries(EntryQuery(session: session.id, limit: 1000))
            #expect(all.total == 1000)
            #expect(all.items.map(\.sequence) == sequences)
            #expect(all.items.allSatisfy { $0.stateSize == 1_000_000 })
            #expect(all.nextAfter == nil)

            var paged: [EntrySummary] = []
            var after: Int64?
            var pages = 0
            repeat {
                let page = try await store.entries(EntryQuery(session: session.id, after: after, limit: 64))
                paged += page.items
                after = page.nextAfter
                pages += 1
            } while after != nil
            #expect(pages == 16)
            #expect(paged == all.items)
            let middle = try await store.entries(EntryQuery(session: session.id, offset: 500, limit: 10))
            #expect(middle.items.map(\.action) == (500..<510).map { "change \($0)" })
            #expect(try await store.sessions().first?.bytes == 1_000_000_000)
        }
    }

    /// A store in a fresh directory, in RAM when there is a tmpfs (a gigabyte of dirty pages on a disk throttles
    /// every writer on the machine), removed afterwards.
    func withScratchStore(_ body: (HistoryStore) async throws -> Void) async throws {
        let base = FileManager.default.isWritableFile(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory()
        let directory = "\(base)/parley-history-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try await HistoryStore.open(directory: directory, limits: .default)
        do {
            try await body(store)
            try await store.close()
        } catch {
            try? await store.close()
            throw error
        }
    }
}
