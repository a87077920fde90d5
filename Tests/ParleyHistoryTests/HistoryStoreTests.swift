import Foundation
import NIOCore
import ParleyDebugger
@testable import ParleyHistory
import ParleyJSON
import Testing

@Suite("History store")
struct HistoryStoreTests {
    @Test("pruning deletes the sessions that ended before the cutoff, with their entries; later and live ones stay")
    func pruneEndedBefore() async throws {
        try await withStore { store, _ in
            var ids: [String: Int64] = [:]
            for name in ["old", "recent", "live"] {
                let session = try await store.beginSession(peerID: name, appName: name, kind: .parley, at: testTime(0))
                _ = try await store.append(StateRecord(action: "a", state: ByteBuffer(string: "{}")), to: session.id, at: testTime(1))
                ids[name] = session.id
            }
            _ = try await store.endSession(ids["old"]!, at: testTime(10))
            _ = try await store.endSession(ids["recent"]!, at: testTime(100))
            let deleted = try await store.deleteSessions(endedBefore: testTime(50))
            #expect(deleted == [ids["old"]!])
            #expect(Set(try await store.sessions().map(\.appName)) == ["recent", "live"])
            await #expect(throws: HistoryStoreError.noSuchSession(ids["old"]!)) {
                try await store.entries(EntryQuery(session: ids["old"]!))
            }
            #expect(try await store.deleteSessions(endedBefore: testTime(50)).isEmpty, "a second prune found more")
        }
    }

    @Test("appended entries are listed oldest first, paged by cursor and by offset, and shown with their exact bytes")
    func appendListPageShow() async throws {
        try await withStore { store, _ in
            let session = try await store.beginSession(peerID: "peer-1", appName: "Listr", kind: .parley, at: testTime(0))
            var appended: [EntrySummary] = []
            for index in 0..<5 {
                let state = #"{"count": \#(index).10, "名前": "ü"}"#
                appended.append(try await store.append(record("add(\(index))", state, screenshot: [0x89, UInt8(index)]), to: session.id, at: testTime(Double(index + 1))))
            }
            #expect(appended.map(\.sequence) == appended.map(\.sequence).sorted())
            #expect(Set(appended.map(\.sequence)).count == 5)
            #expect(appended[2] == EntrySummary(sequence: appended[2].sequence, session: session.id, time: testTime(3), action: "add(2)", stateSize: 31, screenshotSize: 2))

            let sessions = try await store.sessions()
            #expect(sessions == [SessionSummary(id: session.id, peerID: "peer-1", appName: "Listr", kind: .parley, started: testTime(0), entryCount: 5, bytes: 5 * 33)])

            let first = try await store.entries(EntryQuery(session: session.id, limit: 2))
            #expect(first.items == Array(appended[0..<2]))
            #expect(first.total == 5)
            #expect(first.nextAfter == appended[1].sequence)
            let second = try await store.entries(EntryQuery(session: session.id, after: first.nextAfter, limit: 2))
            #expect(second.items == Array(appended[2..<4]))
            let last = try await store.entries(EntryQuery(session: session.id, after: second.nextAfter, limit: 2))
            #expect(last.items == [appended[4]])
            #expect(last.nextAfter == nil)
            let byOffset = try await store.entries(EntryQuery(offset: 3, limit: 10))
            #expect(byOffset.items == Array(appended[3...]))
            #expect(byOffset.nextAfter == nil)

            let shown = try await store.entry(appended[3].sequence)
            #expect(shown.summary == appended[3])
            #expect(String(buffer: shown.state) == #"{"count": 3.10, "名前": "ü"}"#)
            #expect(Array(shown.screenshot.readableBytesView) == [0x89, 3])
            let withoutPicture = try await store.entry(appended[3].sequence, includeScreenshot: false)
            #expect(withoutPicture.screenshot.readableBytes == 0)
            #expect(withoutPicture.state == shown.state)

            #expect(try await store.predecessor(of: appended[3].sequence) == appended[2])
            #expect(try await store.predecessor(of: appended[0].sequence) == nil)
            await #expect(throws: HistoryStoreError.noSuchEntry(999_999)) { try await store.predecessor(of: 999_999) }
            await #expect(throws: HistoryStoreError.noSuchEntry(999_999)) { try await store.entry(999_999) }
            await #expect(throws: HistoryStoreError.noSuchSession(999_999)) { try await store.entries(EntryQuery(session: 999_999)) }

            try await store.endSession(session.id, at: testTime(10))
            try await store.endSession(session.id, at: testTime(20))
            #expect(try await store.session(session.id).ended == testTime(10))
        }
    }

    @Test("listing filters in SQL by patterns and saved filter names, and agrees with the in-memory matcher")
    func filteredListing() async throws {
        try await withStore { store, _ in
            let session = try await store.beginSession(peerID: "p", appName: "App", kind: .original)
            let actions = [
                "hoverStarted", "add(milk)", "window.visibilityChanged", "clock.tick", "add(eggs)", "[x]*?", "a?c", "abc", "Hover", "añc",
            ]
            for action in actions { _ = try await store.append(record(action, "{}"), to: session.id) }
            let saved: [String: ActionTextFilter] = [
                "noisy": .anyOf([.pattern("hover*"), .pattern("window.visibility*"), .pattern("*.tick")]),
                "quiet": .allExcept([.named("noisy")]),
            ]
            let filters: [ActionTextFilter] = [
                .named("quiet"), .named("noisy"), .pattern("add(*)"), .pattern(#"[x]\*\?"#), .pattern("a?c"), .not(.pattern("a*")),
                .anyOf([]), .allExcept([]), .all, .pattern("*"), .pattern(#"\[*"#),
            ]
            for filter in filters {
                let page = try await store.entries(EntryQuery(filter: filter, limit: 100), namedFilters: saved)
                let matcher = try ActionTextFilter.Matcher(filter, named: saved)
                #expect(page.items.map(\.action) == actions.filter(matcher.includes), "\(filter)")
                #expect(page.total == page.items.count)
            }
            let quiet = try await store.entries(EntryQuery(filter: .named("quiet"), limit: 2), namedFilters: saved)
            #expect(quiet.items.map(\.action) == ["add(milk)", "add(eggs)"])
            #expect(quiet.total == 7)
            #expect(quiet.nextAfter != nil)
            let rest = try await store.entries(EntryQuery(filter: .named("quiet"), after: quiet.nextAfter, limit: 100), namedFilters: saved)
            #expect(rest.items.map(\.action) == ["[x]*?", "a?c", "abc", "Hover", "añc"])
            await #expect(throws: HistoryStoreError.invalidFilter(.unknownFilter("loud", referencedBy: nil))) {
                try await store.entries(EntryQuery(filter: .named("loud")), namedFilters: saved)
            }
        }
    }

    @Test("a state that is not JSON, an unknown session or an ended one is refused and stores nothing")
    func badAppends() async throws {
        try await withStore { store, _ in
            let session = try await store.beginSession(peerID: "p", appName: "App", kind: .parley)
            _ = try await store.append(record("ok", #"{"a":1}"#), to: session.id)
            await #expect(throws: HistoryStoreError.invalidState(JSONError(offset: 6, reason: .unexpectedEnd(expected: "',' or '}' after an object member")))) {
                try await store.append(record("bad", #"{"a":1"#), to: session.id)
            }
            await #expect(throws: HistoryStoreError.noSuchSession(42)) { try await store.append(record("x", "{}"), to: 42) }
            try await store.endSession(session.id)
            await #expect(throws: HistoryStoreError.sessionEnded(session.id)) { try await store.append(record("late", "{}"), to: session.id) }
            let long = String(repeating: "a", count: HistoryStore.maximumActionBytes + 1)
            await #expect(throws: HistoryStoreError.actionTooLong(bytes: long.utf8.count, limit: HistoryStore.maximumActionBytes)) {
                try await store.append(record(long, "{}"), to: session.id)
            }
            let page = try await store.entries(EntryQuery())
            #expect(page.items.map(\.action) == ["ok"])
            #expect(try await store.totals() == (entries: 1, bytes: Self.entryCost("ok", #"{"a":1}"#) + Self.sessionCost("App", "p")))
        }
    }

    @Test("retention by entry count drops the oldest entries first, across sessions")
    func retentionByCount() async throws {
        try await withStore(limits: RetentionLimits(maxEntries: 3, maxBytes: 1 << 30)) { store, _ in
            let first = try await store.beginSession(peerID: "a", appName: "A", kind: .parley)
            let second = try await store.beginSession(peerID: "b", appName: "B", kind: .parley)
            var sequences: [Int64] = []
            for index in 0..<5 {
                let session = index.isMultiple(of: 2) ? first.id : second.id
                sequences.append(try await store.append(record("step \(index)", "[\(index)]"), to: session).sequence)
            }
            let kept = try await store.entries(EntryQuery())
            #expect(kept.items.map(\.action) == ["step 2", "step 3", "step 4"])
            #expect(kept.items.map(\.sequence) == Array(sequences[2...]))
            #expect(try await store.totals().entries == 3)
            await #expect(throws: HistoryStoreError.noSuchEntry(sequences[0])) { try await store.entry(sequences[0]) }
            // Lowering the limit applies at once.
            try await store.setLimits(RetentionLimits(maxEntries: 1, maxBytes: 1 << 30))
            #expect(try await store.entries(EntryQuery()).items.map(\.action) == ["step 4"])
            await #expect(throws: HistoryStoreError.invalidLimits(.tooFewEntries(0))) {
                try await store.setLimits(RetentionLimits(maxEntries: 0, maxBytes: 1))
            }
        }
    }

    /// What an entry and a session count against the byte limit (HistorySchema's formulas).
    static func entryCost(_ action: String, _ state: String, screenshot: Int = 0) -> Int64 {
        Int64(state.utf8.count + screenshot + action.utf8.count + 2 * 96)
    }

    static func sessionCost(_ app: String, _ peer: String, host: String = "") -> Int64 { Int64(app.utf8.count + peer.utf8.count + host.utf8.count + 96) }

    @Test("retention by bytes counts states, texts and rows; drops the oldest entries first, never the one just appended, and forgets ended sessions it emptied")
    func retentionByBytes() async throws {
        let padding = String(repeating: "x", count: 296)
        let state = #"{"p":"\#(padding)"}"#
        let entry = Self.entryCost("old 0", state)  // every action here is 5 bytes
        let sessions = Self.sessionCost("A", "old") + 2 * Self.sessionCost("A", "live")
        // Room for the three sessions and three entries, not four.
        try await withStore(limits: RetentionLimits(maxEntries: 100, maxBytes: sessions + 3 * entry + entry / 2)) { store, _ in
            let old = try await store.beginSession(peerID: "old", appName: "A", kind: .parley)
            _ = try await store.beginSession(peerID: "idle", appName: "A", kind: .parley)
            for index in 0..<3 { _ = try await store.append(record("old \(index)", state), to: old.id) }
            try await store.endSession(old.id)
            let live = try await store.beginSession(peerID: "live", appName: "A", kind: .parley)
            _ = try await store.append(record("new 0", state), to: live.id, at: testTime(1))
            // Four entries do not fit: the oldest goes.
            #expect(try await store.entries(EntryQuery()).items.map(\.action) == ["old 1", "old 2", "new 0"])
            #expect(try await store.totals() == (entries: 3, bytes: sessions + 3 * entry))
            _ = try await store.append(record("new 1", state), to: live.id, at: testTime(2))
            _ = try await store.append(record("new 2", state), to: live.id, at: testTime(3))
            #expect(try await store.entries(EntryQuery()).items.map(\.action) == ["new 0", "new 1", "new 2"])
            // The ended session lost all its entries and is forgotten; the open one without entries stays.
            #expect(try await store.sessions().map(\.peerID) == ["idle", "live"])
            // An entry larger than the whole limit is kept, alone.
            let huge = #"{"p":"\#(String(repeating: "y", count: 4000))"}"#
            let kept = try await store.append(record("huge", huge), to: live.id, at: testTime(4))
            #expect(try await store.entries(EntryQuery()).items == [kept])
            #expect(try await store.totals() == (entries: 1, bytes: Self.entryCost("huge", huge) + 2 * Self.sessionCost("A", "live")))
        }
    }

    @Test("a session that recorded nothing is removed when it ends; one with entries is kept, ended")
    func emptySessionsRemoved() async throws {
        try await withStore { store, _ in
            let empty = try await store.beginSession(peerID: "e", appName: "App", kind: .parley)
            let used = try await store.beginSession(peerID: "u", appName: "App", kind: .parley)
            _ = try await store.append(record("a", "{}"), to: used.id)
            #expect(try await store.endSession(empty.id) == true)
            #expect(try await store.endSession(used.id) == false)
            #expect(try await store.sessions().map(\.peerID) == ["u"])
            let totals = try await store.totals()
            #expect(totals == (entries: 1, bytes: Self.entryCost("a", "{}") + Self.sessionCost("App", "u")), "\(totals)")
        }
    }

    @Test("the database file and its WAL stay near historyMaxBytes while an app records far more than that, in texts as well as states")
    func fileStaysNearTheLimit() async throws {
        let limit: Int64 = 2 << 20
        try await withStore(limits: RetentionLimits(maxEntries: 1_000_000, maxBytes: limit)) { store, _ in
            let session = try await store.beginSession(peerID: "p", appName: "App", kind: .parley)
            let action = String(repeating: "t", count: 8 << 10)
            let state = #"{"blob":"\#(String(repeating: "s", count: 8 << 10))"}"#
            // About 8 MiB in all: four times the limit. Between checkpoints the WAL may grow to the writer's own bound.
            let walBound = Checkpointer.walBytesBeforeWriterCheckpoints
            var largest: Int64 = 0
            for _ in 0..<500 {
                _ = try await store.append(record(action, state), to: session.id)
                largest = max(largest, store.fileBytes)
            }
            #expect(try await store.totals().bytes <= limit)
            #expect(largest < limit + walBound + limit / 2, "\(largest) bytes on disk at most for a limit of \(limit)")
            // Once the checkpoints asked for are done, the next commit cuts the WAL back.
            await store.checkpointer.caughtUp()
            _ = try await store.append(record(action, state), to: session.id)
            let onDisk = store.fileBytes
            // Pages of indexes and free lists come on top of the rows, and the WAL up to its cut-off; not 4×.
            #expect(onDisk < limit + Int64(HistoryStore.walSizeLimit) + limit / 2, "\(onDisk) bytes on disk for a limit of \(limit)")
        }
    }

    @Test("a reopened store keeps its sessions and entries, and sequence numbers keep growing")
    func reopen() async throws {
        try await withTemporaryDirectory { directory in
            let store = try await HistoryStore.open(directory: directory)
            let session = try await store.beginSession(peerID: "p", appName: "App", kind: .original, at: testTime(0))
            let one = try await store.append(record("one", #"{"n":1.10}"#, screenshot: [1, 2, 3]), to: session.id, at: testTime(1))
            let two = try await store.append(record("two", #"{"n":2}"#), to: session.id, at: testTime(2))
            try await store.endSession(session.id, at: testTime(3))
            let sessionsBefore = try await store.sessions()
            try await store.close()

            let reopened = try await HistoryStore.open(directory: directory)
            #expect(try await reopened.sessions() == sessionsBefore)
            #expect(try await reopened.entries(EntryQuery()).items == [one, two])
            let detail = try await reopened.entry(one.sequence)
            #expect(String(buffer: detail.state) == #"{"n":1.10}"#)
            #expect(Array(detail.screenshot.readableBytesView) == [1, 2, 3])
            // Even once the newest entry is gone, its number is not handed out again.
            try await reopened.setLimits(RetentionLimits(maxEntries: 1, maxBytes: 1 << 30))
            let next = try await reopened.beginSession(peerID: "q", appName: "App", kind: .parley)
            let three = try await reopened.append(record("three", "{}"), to: next.id)
            #expect(three.sequence > two.sequence)
            try await reopened.close()
            #expect(FileManager.default.fileExists(atPath: directory + "/history.sqlite"))
        }
    }

    @Test("sessions left open by a parleyd that did not end them are closed on reopen, at their last entry's time; those without entries are removed")
    func closesSessionsLeftOpen() async throws {
        try await withTemporaryDirectory { directory in
            let store = try await HistoryStore.open(directory: directory)
            let busy = try await store.beginSession(peerID: "busy", appName: "App", kind: .parley, at: testTime(0))
            _ = try await store.append(record("a", "{}"), to: busy.id, at: testTime(5))
            _ = try await store.append(record("b", "{}"), to: busy.id, at: testTime(7.5))
            let silent = try await store.beginSession(peerID: "silent", appName: "App", kind: .original, at: testTime(1))
            #expect(try await store.sessions().allSatisfy(\.isOpen))
            try await store.close()  // as after a SIGKILL, nobody ended the sessions

            let reopened = try await HistoryStore.open(directory: directory)
            let sessions = try await reopened.sessions()
            #expect(sessions.first { $0.id == busy.id }?.ended == testTime(7.5))
            #expect(!sessions.contains { $0.id == silent.id })
            await #expect(throws: HistoryStoreError.sessionEnded(busy.id)) { try await reopened.append(record("c", "{}"), to: busy.id) }
            try await reopened.close()
        }
    }


    @Test("sessions are listed in id order, a page at a time")
    func sessionPages() async throws {
        try await withStore { store, _ in
            var ids: [Int64] = []
            for index in 0..<5 {
                ids.append(try await store.beginSession(peerID: "p\(index)", appName: "App \(index)", kind: .parley, at: testTime(Double(index))).id)
            }
            #expect(try await store.sessions().map(\.id) == ids)
            #expect(try await store.sessions(limit: 2).map(\.id) == Array(ids[0..<2]))
            #expect(try await store.sessions(after: ids[1], limit: 2).map(\.id) == Array(ids[2..<4]))
            #expect(try await store.sessions(after: ids[4]).isEmpty)
        }
    }

    @Test("a history file that is not a database is refused with a failure a caller can match, and is left as it was")
    func notADatabase() async throws {
        try await withTemporaryDirectory { directory in
            let path = URL(fileURLWithPath: directory).appendingPathComponent(HistoryStore.fileName).path
            let garbage = Data(repeating: 0x5A, count: 8192)
            try garbage.write(to: URL(fileURLWithPath: path))
            do {
                let store = try await HistoryStore.open(directory: directory)
                try await store.close()
                Issue.record("a file of garbage opened as a history")
            } catch {
                guard let error = error as? HistoryStoreError, case .cannotOpen(let reported, let failure) = error else {
                    Issue.record("not cannotOpen: \(error)")
                    return
                }
                #expect(reported == path)
                #expect(failure.kind == .corrupt, "\(failure)")
                #expect(error.description.hasPrefix("cannot open the history database \(path): "))
            }
            #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == garbage)
        }
    }
}
