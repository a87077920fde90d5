import Foundation
import NIOCore
import Parley
import ParleyDebugger
import ParleyTestSupport
import Testing

extension FaultTests {
    static let killCycles = 2
    /// Entries a cycle waits for before the SIGKILL (the app is still streaming then).
    static let entriesBeforeKill = 400

    /// The state an app records as step `step`: about 1 KB of JSON whose bytes follow from the step alone, so
    /// any entry read back can be checked byte for byte.
    static func recordedState(_ step: Int) -> String {
        let items = (0..<12).map { #"{"id":\#(step * 12 + $0),"title":"item \#($0) of step \#(step)","done":\#($0 % 3 == 0)}"# }
        return #"{"step":\#(step),"items":[\#(items.joined(separator: ","))],"total":\#(step).50}"#
    }

    /// An app streams state records to parleyd as fast as it can (typed `parley.debugger.record` messages; parleyd's
    /// rate limit is off for it, or the default 1 000 frames a second would close it first — correctly, but that is
    /// not what this tests), and parleyd is killed with SIGKILL while it writes them. Twice. After each kill a copy
    /// of the database files passes SQLite's `PRAGMA integrity_check`, and after each restart the history lists
    /// every entry with consecutive sequence numbers, each one exactly the state the app sent, and the killed
    /// session is closed.
    @Test("SIGKILL of parleyd while an app streams history: after restart the store is intact, consecutive and byte-exact")
    func killDuringHistory() async throws {
        let sqlite = try Self.sqlite3()
        let arguments = ["--max-messages-per-second", "0"]
        let config = #"{"historyMaxEntries": 1000000}"#
        var daemon = try await ParleydProcess.start(name: "faultd", arguments: arguments, config: config)
        let scratch = daemon.directory
        let directory = scratch.url
        var recorded = 0  // entries kept over all cycles so far

        for cycle in 1...Self.killCycles {
            let app = dialer("debugger-app-\(cycle)")
            let streamed = Shared(0)
            let running = daemon
            let earlier = recorded
            let (killedAfter, entriesAtKill): (Duration, Int) = try await withRunning([app]) {
                let parleyd = try await app.connect(to: running.endpoint)
                let started = ContinuousClock.now
                return try await withThrowingTaskGroup(of: (Duration, Int)?.self) { group in
                    group.addTask {
                        // As fast as it can, until the connection dies with parleyd.
                        var step = 0
                        while !Task.isCancelled {
                            let record = StateRecord(action: "step.\(step)", state: ByteBuffer(string: Self.recordedState(step)))
                            guard (try? await app.sendRaw(typeName: StateRecord.messageType, payload: record.encoded(), to: parleyd.id)) != nil else { break }
                            step += 1
                            streamed.update { $0 = step }
                        }
                        return nil
                    }
                    group.addTask {
                        // Sequence numbers run on from the earlier cycles' entries (checked below): this cycle's come
                        // after them, and `history --follow --limit` ends once parleyd has stored that many.
                        let followed = try await running.ctl(
                            ["history", "--json", "--follow", "--after", String(earlier), "--limit", String(Self.entriesBeforeKill)],
                            timeout: .seconds(60))
                        try #require(followed.status == 0, "\(followed)")
                        try await running.stop(SIGKILL)
                        return (ContinuousClock.now - started, try Self.jsonLines(followed).count)
                    }
                    var result: (Duration, Int)?
                    for try await outcome in group {
                        if let outcome { result = outcome }
                    }
                    return try #require(result)
                }
            }

            // A copy of the files as the kill left them, checked by SQLite itself (recovering the WAL in the copy).
            let copy = FileManager.default.temporaryDirectory.appendingPathComponent("pfault-db-\(UUID().uuidString.prefix(8))")
            try FileManager.default.createDirectory(at: copy, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: copy) }
            for suffix in ["", "-wal", "-shm"] {
                let file = directory.appendingPathComponent("history.sqlite" + suffix)
                if FileManager.default.fileExists(atPath: file.path) {
                    try FileManager.default.copyItem(at: file, to: copy.appendingPathComponent("history.sqlite" + suffix))
                }
            }
            let integrity = try await ChildProcess.run(sqlite, [copy.appendingPathComponent("history.sqlite").path, "PRAGMA integrity_check;"])

            let restartBegan = ContinuousClock.now
            daemon = try await ParleydProcess.start(name: "faultd", arguments: arguments, config: config, in: scratch)
            let restart = ContinuousClock.now - restartBegan
            let entries = try await Self.history(daemon)
            let sessions = try await Self.sessions(daemon)
            let mine = entries.filter { ($0["action"] as? String)?.hasPrefix("step.") == true }
            let thisCycle = Array(mine.dropFirst(recorded))

            report("kill \(cycle): the app queued \(streamed.current) records; SIGKILL after \(Latencies.ms(killedAfter)) with ≥ \(entriesAtKill) stored; integrity_check of the files left: \(integrity.stdout.trimmingCharacters(in: .whitespacesAndNewlines)); restart to ready \(Latencies.ms(restart))")
            report("kill \(cycle): history after restart: \(entries.count) entries, \(thisCycle.count) from the killed session (\(streamed.current - thisCycle.count) queued but not stored: in flight at the kill); sessions \(sessions.count), all closed: \(sessions.allSatisfy { $0["ended"] != nil })")

            #expect(integrity.status == 0 && integrity.stdout == "ok\n", "\(integrity)")
            #expect(thisCycle.count >= entriesAtKill, "entries stored before the kill were lost")
            let sequences = entries.compactMap { $0["sequence"] as? Int }
            #expect(sequences == (0..<entries.count).map { $0 + 1 }, "sequence numbers are not consecutive from 1")
            for (index, entry) in thisCycle.enumerated() where entry["action"] as? String != "step.\(index)" {
                Issue.record("entry \(entry["sequence"] ?? "?") is \(entry["action"] ?? "?"), expected step.\(index)")
                break
            }
            #expect(sessions.count == cycle && sessions.allSatisfy { $0["ended"] != nil }, "\(sessions)")

            // Every state byte for byte, through an export of the killed session; a few through `show --state` too.
            let session = try #require(thisCycle.first?["session"] as? Int)
            let exportFile = copy.appendingPathComponent("session.jsonl")
            let export = try await daemon.ctl(["export", String(session), exportFile.path])
            #expect(export.status == 0, "\(export)")
            let lines = try String(contentsOf: exportFile, encoding: .utf8).split(separator: "\n").dropFirst()
            #expect(lines.count == thisCycle.count)
            let mismatched = lines.enumerated().filter { index, line in !line.contains(#""state":\#(Self.recordedState(index)),"screenshot""#) }
            #expect(mismatched.isEmpty, "\(mismatched.count) exported states differ from what the app sent, the first: \(mismatched.first.map { String($0.1.prefix(300)) } ?? "")")
            for index in Set([0, thisCycle.count / 2, thisCycle.count - 1]) {
                let sequence = try #require(thisCycle[index]["sequence"] as? Int)
                let shown = try await daemon.ctl(["show", String(sequence), "--state"])
                #expect(shown.status == 0 && shown.stdout == Self.recordedState(index) + "\n", "show \(sequence): \(shown)")
                #expect((try? JSONSerialization.jsonObject(with: Data(shown.stdout.utf8))) != nil, "show \(sequence) is not JSON")
            }
            recorded += thisCycle.count
        }

        #expect(try await daemon.stop() == 0)
        let final = try await ChildProcess.run(sqlite, [directory.appendingPathComponent("history.sqlite").path, "PRAGMA integrity_check;"])
        #expect(final.stdout == "ok\n", "\(final)")
        try? FileManager.default.removeItem(at: directory)
    }

    /// The sqlite3 command-line tool (Debian package `sqlite3`, installed by scripts/require-packages).
    static func sqlite3() throws -> String {
        for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":") {
            let candidate = "\(directory)/sqlite3"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        throw PeerProcessError("sqlite3 is not on PATH; scripts/require-packages installs it (Debian package sqlite3)")
    }

    static func history(_ daemon: ParleydProcess) async throws -> [[String: Any]] {
        try await jsonLines(daemon.ctl(["history", "--json"]))
    }

    static func sessions(_ daemon: ParleydProcess) async throws -> [[String: Any]] {
        try await jsonLines(daemon.ctl(["sessions", "--json"]))
    }

    private static func jsonLines(_ result: (status: Int32, stdout: String, stderr: String)) throws -> [[String: Any]] {
        guard result.status == 0 else { throw PeerProcessError("parleyctl failed: \(result)") }
        return result.stdout.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }
}
