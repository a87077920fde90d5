import Foundation
import NIOCore
import ParleyDebugger
import ParleyHistory
import ParleyJSON
import Testing

@Suite("History export and import")
struct HistoryExportTests {
    static let states = [
        #"{"total":1.10,"huge":1e400,"names":["名前","ü","e\u0301"],"quote":"a\"b\\c\/d"}"#,
        #"[1, 2.50, -0, 12345678901234567890123]"#,
        "{\n  \"pretty\": [\n    1.0\n  ],\r\n  \"text\": \"line\\nbreak\"\n}",
        "null",
    ]

    /// A session with varied entries, ended; returns the session and its entries.
    private func fill(_ store: HistoryStore) async throws -> (SessionSummary, [EntrySummary]) {
        let session = try await store.beginSession(peerID: "peer-\"1\"", appName: "Listr ✓", kind: .original, at: testTime(0))
        var entries: [EntrySummary] = []
        for (index, state) in Self.states.enumerated() {
            let screenshot = (0..<(index * 7)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
            let action = index == 1 ? "add(\"milk\")\nsecond line" : "action \(index) ✓"
            entries.append(try await store.append(record(action, state, screenshot: screenshot), to: session.id, at: testTime(Double(index) + 0.25)))
        }
        try await store.endSession(session.id, at: testTime(9.5))
        return (try await store.session(session.id), entries)
    }

    @Test("export then import gives a new imported session whose states, screenshots, actions and times are byte-exact")
    func roundTrip() async throws {
        try await withStore { store, _ in
            let (session, entries) = try await fill(store)
            let file = try await store.export(session: session.id)
            let lines = String(buffer: file).split(separator: "\n", omittingEmptySubsequences: false)
            #expect(lines.count == entries.count + 2)
            #expect(lines.last == "")
            #expect(
                lines[0]
                    == #"{"format":"parley-debugger-history","version":1,"session":{"peerID":"peer-\"1\"","appName":"Listr ✓","kind":"original","started":"2027-01-15T08:00:00.000Z","ended":"2027-01-15T08:00:09.500Z"},"entries":4}"#
            )
            for line in lines.dropLast() { try JSONSkimmer.validate(ByteBuffer(string: String(line))) }
            // States without line breaks are embedded verbatim; the pretty-printed one travels as exact text.
            #expect(lines[1].contains(#","state":"# + Self.states[0] + #","screenshot":"""#))
            #expect(lines[2].contains(#","state":"# + Self.states[1] + ","))
            #expect(lines[3].contains(#","stateText":"{\n  \"pretty\": [\n    1.0\n  ],\r\n"#))

            let imported = try await store.importSession(file)
            // Idempotent: the same file again stores nothing and names the session it is already in.
            await #expect(throws: HistoryStoreError.alreadyInHistory(session: imported.id)) { try await store.importSession(file) }
            #expect(try await store.sessions().count == 2)
            #expect(imported.id != session.id)
            #expect(imported.imported)
            #expect(!session.imported)
            #expect(imported.peerID == session.peerID && imported.appName == session.appName && imported.kind == .original)
            #expect(imported.started == session.started && imported.ended == session.ended)
            #expect(imported.entryCount == entries.count && imported.bytes == session.bytes)
            let copies = try await store.entries(EntryQuery(session: imported.id, limit: 100)).items
            #expect(copies.count == entries.count)
            for (original, copy) in zip(entries, copies) {
                #expect(copy.sequence > entries.last!.sequence)
                #expect(copy.action == original.action && copy.time == original.time)
                let before = try await store.entry(original.sequence)
                let after = try await store.entry(copy.sequence)
                #expect(after.state.readableBytesView.elementsEqual(before.state.readableBytesView))
                #expect(after.screenshot == before.screenshot)
            }
        }
    }

    @Test("a chunked export stays near its byte budget in whole lines and concatenates to the full file; a chunked import gives the same session")
    func chunks() async throws {
        try await withStore { store, _ in
            let session = try await store.beginSession(peerID: "p", appName: "App", kind: .parley, at: testTime(0))
            for index in 0..<12 {
                let state = #"{"i":\#(index),"pad":""# + String(repeating: "z", count: 10_000) + #""}"#
                _ = try await store.append(record("step \(index)", state, screenshot: [UInt8(index)]), to: session.id, at: testTime(Double(index)))
            }
            let budget = 25_000
            var pieces: [ByteBuffer] = []
            var chunk = try await store.exportChunk(session: session.id, maxBytes: budget)
            pieces.append(chunk.data)
            while let next = chunk.next {
                chunk = try await store.exportChunk(session: session.id, cursor: next, maxBytes: budget)
                pieces.append(chunk.data)
            }
            #expect(pieces.count == 6)
            #expect(pieces.allSatisfy { $0.readableBytes <= budget && $0.readableBytesView.last == 0x0A })
            var joined = ByteBuffer()
            for piece in pieces { joined.writeImmutableBuffer(piece) }
            let whole = try await store.export(session: session.id)
            #expect(joined == whole)

            let parts = HistoryImport.pieces(of: whole, maxBytes: budget)
            #expect(parts.count == 7)  // the header alone, then six pieces of two entry lines
            var progress = try await store.beginImport(header: parts[0])
            #expect(try await store.sessions().count == 1)  // invisible until finished
            for part in parts.dropFirst() { try await store.continueImport(&progress, lines: part) }
            let imported = try await store.finishImport(progress)
            #expect(imported.imported && imported.entryCount == 12 && imported.ended == testTime(11))
            let originals = try await store.entries(EntryQuery(session: session.id, limit: 100)).items
            let copies = try await store.entries(EntryQuery(session: imported.id, limit: 100)).items
            #expect(copies.map(\.action) == (0..<12).map { "step \($0)" })
            for (original, copy) in zip(originals, copies) {
                #expect(try await store.entry(copy.sequence).state == store.entry(original.sequence).state)
            }
        }
    }

    @Test(
        "a bad line stops the import with its line number and nothing is stored",
        arguments: [
            (3, #"{"sequence":2,"time":"2027-01-15T08:00:01.000Z","action":"x","state":{bad},"screenshot":""}"#, ImportProblem.invalidJSON(JSONError(offset: 70, reason: .unexpectedByte(UInt8(ascii: "b"), expected: "a member name (a string in double quotes)")))),
            (3, #"{"sequence":2,"time":"2027-01-15T08:00:01.000Z","state":{},"screenshot":""}"#, .missingField("action")),
            (3, #"{"sequence":2,"time":"2027-01-15T08:00:01.000Z","action":1,"state":{},"screenshot":""}"#, .wrongType(field: "action", expected: "a string", found: .number)),
            (3, #"{"sequence":2,"time":"yesterday","action":"x","state":{},"screenshot":""}"#, .invalidTime(field: "time", text: "yesterday")),
            (3, #"{"sequence":2,"time":"2027-01-15T08:00:01.000Z","action":"x","state":{},"screenshot":"%%%%"}"#, .invalidScreenshot(.invalidCharacter(offset: 0, byte: UInt8(ascii: "%")))),
            (3, #"{"sequence":2,"time":"2027-01-15T08:00:01.000Z","action":"x","stateText":"{nope","screenshot":""}"#, .stateTextNotJSON(JSONError(offset: 1, reason: .unexpectedByte(UInt8(ascii: "n"), expected: "a member name (a string in double quotes)")))),
            (3, "", .empty),
            (3, "[1]", .notAnObject),
            (1, #"{"format":"something-else","version":1,"session":{},"entries":0}"#, .unsupportedFormat(#"the format is "something-else", not "parley-debugger-history""#)),
            (1, #"{"format":"parley-debugger-history","version":3,"session":{},"entries":0}"#, .unsupportedFormat("version 3; this parleyd reads versions 1 to 2")),
        ]
    )
    func badLine(lineNumber: Int, replacement: String, problem: ImportProblem) async throws {
        try await withStore { store, _ in
            let (session, _) = try await fill(store)
            let file = try await store.export(session: session.id)
            var lines = String(buffer: file).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            lines[lineNumber - 1] = replacement
            let corrupted = ByteBuffer(string: lines.joined(separator: "\n"))
            let before = try await store.totals()
            let expected = HistoryStoreError.invalidImport(line: lineNumber, problem: problem)

            await #expect(throws: expected) { try await store.importSession(corrupted) }
            #expect(try await store.sessions() == [session])
            #expect(try await store.totals() == before)

            // Fed in pieces, the entries before the bad line were written, and are removed again.
            let parts = HistoryImport.pieces(of: corrupted, maxBytes: 1)
            await #expect(throws: expected) {
                var progress = try await store.beginImport(header: parts[0])
                for part in parts.dropFirst() { try await store.continueImport(&progress, lines: part) }
                _ = try await store.finishImport(progress)
            }
            #expect(try await store.sessions() == [session])
            #expect(try await store.totals() == before)
            #expect(expected.description.hasPrefix("cannot import: line \(lineNumber): "))
        }
    }

    /// Feeds `file` in pieces of `maxBytes`, as parleyctl and the web's upload do.
    private func importInPieces(_ file: ByteBuffer, into store: HistoryStore, maxBytes: Int = 1) async throws -> SessionSummary {
        let parts = HistoryImport.pieces(of: file, maxBytes: maxBytes)
        var progress = try await store.beginImport(header: parts[0])
        for part in parts.dropFirst() { try await store.continueImport(&progress, lines: part) }
        return try await store.finishImport(progress)
    }

    @Test("a damaged copy of a session imported before is reported as damaged; an intact copy as imported before")
    func damagedCopyOfAnImport() async throws {
        try await withStore { store, _ in
            let (session, _) = try await fill(store)
            let file = try await store.export(session: session.id)
            let imported = try await importInPieces(file, into: store)
            let lines = String(buffer: file).split(separator: "\n").map(String.init)

            let truncated = ByteBuffer(string: lines.dropLast().joined(separator: "\n") + "\n")
            await #expect(throws: HistoryStoreError.invalidImport(line: 5, problem: .entryCount(announced: 4, found: 3))) {
                try await importInPieces(truncated, into: store)
            }
            var broken = lines
            broken[2] = #"{"sequence":2,"time":"yesterday","action":"x","state":{},"screenshot":""}"#
            await #expect(throws: HistoryStoreError.invalidImport(line: 3, problem: .invalidTime(field: "time", text: "yesterday"))) {
                try await importInPieces(ByteBuffer(string: broken.joined(separator: "\n") + "\n"), into: store)
            }
            await #expect(throws: HistoryStoreError.alreadyInHistory(session: imported.id)) { try await importInPieces(file, into: store) }
            #expect(try await store.sessions().map(\.id) == [session.id, imported.id])
        }
    }

    @Test("an import that fails gives back the session and entry numbers it took; the next one gets them")
    func failedImportGivesNumbersBack() async throws {
        try await withStore { store, _ in
            let (session, entries) = try await fill(store)
            let file = try await store.export(session: session.id)
            // Renamed, so that it is not the session imported before; the last line damaged, so that three entries
            // are written before the import fails.
            var lines = String(buffer: file).split(separator: "\n").map(String.init)
            lines[0] = lines[0].replacingOccurrences(of: #""appName":"Listr ✓""#, with: #""appName":"Copy""#)
            let intact = ByteBuffer(string: lines.joined(separator: "\n") + "\n")
            lines[4] = "[1]"
            let damaged = ByteBuffer(string: lines.joined(separator: "\n") + "\n")
            for _ in 0..<3 {
                await #expect(throws: HistoryStoreError.invalidImport(line: 5, problem: .notAnObject)) {
                    try await importInPieces(damaged, into: store)
                }
            }
            let imported = try await importInPieces(intact, into: store)
            #expect(imported.id == session.id + 1)
            let copies = try await store.entries(EntryQuery(session: imported.id, limit: 100)).items
            #expect(copies.map(\.sequence) == entries.map { $0.sequence + Int64(entries.count) })

            // A number someone saw is never handed out again: the deleted session's stays used.
            try await store.deleteSession(imported.id)
            await #expect(throws: HistoryStoreError.self) { try await importInPieces(damaged, into: store) }
            #expect(try await importInPieces(intact, into: store).id == imported.id + 1)
        }
    }

    @Test("a file with fewer or more entry lines than its header announces is refused")
    func wrongEntryCount() async throws {
        try await withStore { store, _ in
            let (session, _) = try await fill(store)
            let lines = String(buffer: try await store.export(session: session.id)).split(separator: "\n").map(String.init)
            let truncated = ByteBuffer(string: lines.dropLast().joined(separator: "\n") + "\n")
            await #expect(throws: HistoryStoreError.invalidImport(line: 5, problem: .entryCount(announced: 4, found: 3))) {
                try await store.importSession(truncated)
            }
            let parts = HistoryImport.pieces(of: truncated)
            var progress = try await store.beginImport(header: parts[0])
            for part in parts.dropFirst() { try await store.continueImport(&progress, lines: part) }
            await #expect(throws: HistoryStoreError.invalidImport(line: 5, problem: .entryCount(announced: 4, found: 3))) {
                try await store.finishImport(progress)
            }
            let doubled = ByteBuffer(string: (lines + [lines[4]]).joined(separator: "\n"))
            await #expect(throws: HistoryStoreError.invalidImport(line: 7, problem: .entryCount(announced: 4, found: 5))) {
                try await store.importSession(doubled)
            }
            #expect(try await store.sessions() == [session])
        }
    }

    @Test("an export whose entries retention drops midway fails instead of producing a file with a gap")
    func exportInterruptedByRetention() async throws {
        try await withStore(limits: RetentionLimits(maxEntries: 6, maxBytes: 1 << 30)) { store, _ in
            let exported = try await store.beginSession(peerID: "p", appName: "App", kind: .parley)
            for index in 0..<6 { _ = try await store.append(record("e\(index)", #"{"i":\#(index)}"#), to: exported.id) }
            let first = try await store.exportChunk(session: exported.id, maxBytes: 1)
            let next = try #require(first.next)
            #expect(next.written == 1)
            let other = try await store.beginSession(peerID: "q", appName: "App", kind: .parley)
            for _ in 0..<3 { _ = try await store.append(record("other", "{}"), to: other.id) }
            await #expect(throws: HistoryStoreError.exportIncomplete(expected: 6, written: 4)) {
                var cursor: HistoryExportCursor? = next
                while let position = cursor { cursor = try await store.exportChunk(session: exported.id, cursor: position, maxBytes: 1).next }
            }
        }
    }
}
