import Foundation
import NIOCore
import Parley
import ParleyDebugger
import ParleyRemoteDebugger
import ParleyTestSupport
import Testing

/// parleyd as the remote state debugger, driven the way users drive it: apps connect over TCP on loopback (an app
/// written for the original Swift Talk debugger, in Python, from the framing alone; and the Swift client), and a
/// person uses parleyctl through the control socket.
@Suite("Remote state debugger", .serialized, .timeLimit(.minutes(3)))
struct DebuggerTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let originalApp = repository.appendingPathComponent("scripts/interop/original_debugger_app.py").path

    /// States whose exact bytes matter: a number with a trailing zero, one beyond Double, unicode keys, key order.
    static let states = [
        #"{"count":1.10,"big":12345678901234567890,"名前":"ü","items":[{"title":"milk"}],"z":null,"a":true}"#,
        #"{"count":2.50,"big":12345678901234567891,"名前":"ü","items":[{"title":"milk"},{"title":"bread"}],"z":null,"a":true}"#,
        #"{"count":2.50,"big":12345678901234567891,"名前":"üü","items":[{"title":"oat milk"}],"z":{"n":1},"a":"yes"}"#,
    ]
    static let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13, 1, 2, 3]

    static func python() throws -> String {
        for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":") {
            let candidate = "\(directory)/python3"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        throw PeerProcessError("python3 is not on PATH (scripts/require-packages installs it)")
    }

    /// The Python app: connects to parleyd, sends `sends` (action, state, PNG), waits for `expect` states back.
    static func originalApp(port: Int, sends: [(String, String, [UInt8])], expect: Int, timeout: Int = 30) throws -> ChildProcess {
        var arguments = [originalApp, "--connect", "127.0.0.1", String(port), "--expect", String(expect), "--timeout", String(timeout)]
        for (action, state, png) in sends {
            arguments += ["--send", action, Data(state.utf8).base64EncodedString(), Data(png).base64EncodedString()]
        }
        return try ChildProcess(try python(), arguments)
    }

    /// The states the app received, as exact bytes.
    static func received(_ app: ChildProcess) -> [String] { received(in: app.stdout) }

    static func received(in output: String) -> [String] {
        output.split(separator: "\n").compactMap { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                object["event"] as? String == "received", let state = object["state"] as? String,
                let bytes = Data(base64Encoded: state)
            else { return nil }
            return String(decoding: bytes, as: UTF8.self)
        }
    }

    /// Returns once the app has printed that it received `count` states.
    static func waitForReceived(_ app: ChildProcess, count: Int) async throws {
        _ = try await app.waitFor(in: \.stdout) { received(in: $0).count >= count ? true : nil }
    }

    /// `parleyctl history --json`, decoded.
    static func history(_ daemon: ParleydProcess, _ extra: [String] = []) async throws -> [[String: Any]] {
        let result = try await daemon.ctl(["history", "--json"] + extra)
        #expect(result.status == 0, "\(result)")
        return result.stdout.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }

    /// Returns the history once it holds `count` entries (`extra` narrows it): `parleyctl history --follow
    /// --limit count` exits as soon as parleyd has recorded them, the event itself.
    static func waitForHistory(_ daemon: ParleydProcess, count: Int, _ extra: [String] = []) async throws -> [[String: Any]] {
        let result = try await daemon.ctl(["history", "--json", "--follow", "--limit", String(count)] + extra)
        #expect(result.status == 0, "\(result)")
        return result.stdout.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }

    @Test("a diff of states larger together than diffMaxBytes is refused with the limit and how to raise it; below it, it is computed")
    func diffLimit() async throws {
        let daemon = try await ParleydProcess.start(staticPeer: nil, arguments: ["--diff-max-bytes", String(1 << 20)])
        let app = Transceiver(configuration: TransceiverConfiguration(name: "big-app", identity: .ephemeral, listenHost: nil))
        try await app.start()
        let parleyd = try await app.connect(to: Endpoint(host: "127.0.0.1", port: daemon.port))
        for (index, size) in [300_000, 300_000, 900_000].enumerated() {
            let state = #"{"n":\#(index),"text":""# + String(repeating: "x", count: size) + #""}"#
            try await app.sendRaw(
                typeName: StateRecord.messageType, payload: StateRecord(action: "step.\(index)", state: ByteBuffer(string: state)).encoded(),
                to: parleyd.id)
        }
        let entries = try await Self.waitForHistory(daemon, count: 3)
        let sequences = entries.compactMap { $0["sequence"] as? Int }
        let small = try await daemon.ctl(["diff", String(sequences[1])])
        #expect(small.status == 0 && small.stdout.contains("n"), "\(small)")
        let large = try await daemon.ctl(["diff", String(sequences[2])])
        #expect(large.status == 1, "\(large)")
        #expect(large.stderr.contains("above diffMaxBytes (1048576)") && large.stderr.contains("raise diffMaxBytes"), "\(large.stderr)")
        await app.stop()
        #expect(try await daemon.stop() == 0)
    }

    @Test("a new connection with a connected app's peer id gets a session of its own; a replay of the old session does not reach it")
    func newConnectionNewSession() async throws {
        let daemon = try await ParleydProcess.start(staticPeer: nil)
        let id = PeerID()
        func app(_ name: String, restored: Inbox<String>) -> Transceiver {
            let app = Transceiver(configuration: TransceiverConfiguration(name: name, identity: .fixed(id), listenHost: nil))
            app.receiveRaw(typeName: StateRestore.messageType) { message, _ in restored.put(String(buffer: message.payload)) }
            return app
        }
        let (firstRestored, secondRestored) = (Inbox<String>(), Inbox<String>())
        let first = app("app", restored: firstRestored)
        let second = app("app", restored: secondRestored)
        try await first.start()
        try await second.start()
        let endpoint = Endpoint(host: "127.0.0.1", port: daemon.port)
        let toFirst = try await first.connect(to: endpoint)
        try await first.sendRaw(typeName: StateRecord.messageType, payload: StateRecord(action: "one", state: ByteBuffer(string: #"{"n":1}"#)).encoded(), to: toFirst.id)
        _ = try await Self.waitForHistory(daemon, count: 1)
        // The same id, the same host: a reconnect as far as anyone can tell. It replaces the first connection.
        let toSecond = try await second.connect(to: endpoint)
        try await second.sendRaw(typeName: StateRecord.messageType, payload: StateRecord(action: "two", state: ByteBuffer(string: #"{"n":2}"#)).encoded(), to: toSecond.id)
        let entries = try await Self.waitForHistory(daemon, count: 2)
        let sessions = Set(entries.compactMap { $0["session"] as? Int })
        #expect(sessions.count == 2, "the second connection inherited the first one's session: \(entries)")

        let old = try await daemon.ctl(["replay", String(entries[0]["sequence"] as? Int ?? 0)])
        #expect(old.status == 1, "\(old)")
        // parleyd says the app is gone; parleyctl adds what to do about it with its own options.
        #expect(old.stderr.hasPrefix("parleyctl: error: the app of session ") && old.stderr.hasSuffix("; choose one with --to or use --all\n"), "\(old)")
        let new = try await daemon.ctl(["replay", String(entries[1]["sequence"] as? Int ?? 0)])
        #expect(new.status == 0, "\(new)")
        #expect(try await secondRestored.take() == [#"{"n":2}"#])
        await first.stop()
        await second.stop()
        #expect(try await daemon.stop() == 0)
    }

    @Test("an action text that would drive the reader's terminal (OSC 52 writes the clipboard) is shown escaped; --json keeps it exact")
    func escapedActions() async throws {
        let daemon = try await ParleydProcess.start(staticPeer: nil)
        let action = "\u{1B}]52;c;ZXZpbA==\u{07}\u{9B}2J\u{2028}evil"
        let app = try Self.originalApp(port: daemon.port, sends: [(action, Self.states[0], [])], expect: 0)
        let entries = try await Self.waitForHistory(daemon, count: 1)
        #expect(entries.first?["action"] as? String == action, "--json is exact")
        #expect(try await app.exitStatus(within: .seconds(20)) == 0)
        let text = try await daemon.ctl(["history"])
        #expect(text.status == 0)
        #expect(text.stdout.contains(#"\x1b]52;c;ZXZpbA==\x07\x9b2J\u2028evil"#), "\(text.stdout)")
        #expect(!text.stdout.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x07 || $0.value == 0x9B || $0.value == 0x2028 })
        let shown = try await daemon.ctl(["show", String(entries.first?["sequence"] as? Int ?? 0)])
        #expect(shown.stdout.contains(#"action:     \x1b]52;c;"#), "\(shown.stdout)")
        #expect(try await daemon.stop() == 0)
    }

    @Test("history --follow lists what is kept, then prints each new entry once as it is recorded; Ctrl-C ends it with 0, parleyd stopping with 5")
    func followHistory() async throws {
        let daemon = try await ParleydProcess.start(staticPeer: nil)
        @Sendable func actions(_ text: String) -> [String] {
            text.split(separator: "\n").compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?["action"] as? String }
        }
        // Following an empty history (when this follower is quicker than the app; else it lists the first entry): every entry comes as an update, and none twice.
        let fromEmpty = try ChildProcess("parleyctl", ["history", "--follow", "--json", "--limit", "3", "--socket", daemon.controlSocket])
        let first = try Self.originalApp(port: daemon.port, sends: [("before", Self.states[0], [])], expect: 0)
        _ = try await Self.waitForHistory(daemon, count: 1)
        #expect(try await first.exitStatus(within: .seconds(20)) == 0)

        let follower = try ChildProcess("parleyctl", ["history", "--follow", "--json", "--socket", daemon.controlSocket])
        let quiet = try ChildProcess("parleyctl", ["history", "--follow", "--action", "nothing-matches", "--socket", daemon.controlSocket])
        _ = try await follower.waitFor { actions($0) == ["before"] ? true : nil }
        _ = try await quiet.waitFor { $0.contains("SEQ") ? true : nil }  // the text header: the listing is done
        let second = try Self.originalApp(port: daemon.port, sends: [("during.1", Self.states[1], []), ("during.2", Self.states[2], [])], expect: 0)
        _ = try await follower.waitFor { actions($0).count == 3 ? true : nil }
        #expect(actions(follower.stdout) == ["before", "during.1", "during.2"])
        #expect(try await second.exitStatus(within: .seconds(20)) == 0)
        #expect(try await fromEmpty.exitStatus(within: .seconds(10)) == 0, "\(fromEmpty.stderr)")
        #expect(actions(fromEmpty.stdout) == ["before", "during.1", "during.2"])

        #expect(try await follower.stop(SIGINT) == 0, "\(follower.stderr)")
        #expect(try await daemon.child.stop(SIGTERM) == 0)
        #expect(try await quiet.exitStatus(within: .seconds(10)) == 5, "\(quiet.stderr)")
        #expect(quiet.stderr.contains("closed the connection"), "\(quiet.stderr)")
    }

    @Test("an app of the original debugger (Python, 206 framing) records three states; replaying the first gives it exactly that state back")
    func originalFramingEndToEnd() async throws {
        let daemon = try await ParleydProcess.start(staticPeer: nil)
        let app = try Self.originalApp(
            port: daemon.port,
            sends: [("load", Self.states[0], Self.png), ("addItem", Self.states[1], []), ("rename", Self.states[2], Self.png)],
            expect: 1
        )
        let entries = try await Self.waitForHistory(daemon, count: 3)
        #expect(entries.map { $0["action"] as? String } == ["load", "addItem", "rename"])
        let first = try #require(entries.first?["sequence"] as? Int)

        // What was stored is what was sent, byte for byte; the screenshot is the PNG itself (not base64).
        let shown = try await daemon.ctl(["show", String(first), "--state"])
        #expect(shown.status == 0 && shown.stdout == Self.states[0] + "\n", "\(shown)")
        let imageFile = daemon.directory.url.appendingPathComponent("first.png")
        let image = try await daemon.ctl(["show", String(first), "--image", imageFile.path])
        #expect(image.status == 0, "\(image)")
        #expect(try Data(contentsOf: imageFile) == Data(Self.png))
        // An existing file is kept unless --force; `-` is standard output, and then the PNG is all it gets.
        let again = try await daemon.ctl(["show", String(first), "--image", imageFile.path])
        #expect(again.status == 1 && again.stderr.contains("exists; give --force"), "\(again)")
        #expect(try await daemon.ctl(["show", String(first), "--image", imageFile.path, "--force"]).status == 0)
        let piped = try await daemon.ctl(["show", String(first), "--image", "-"])
        #expect(piped.status == 0 && piped.stdout == String(decoding: Self.png, as: UTF8.self), "\(piped)")
        #expect(!FileManager.default.fileExists(atPath: FileManager.default.currentDirectoryPath + "/-"), "a file named - was written")

        let replay = try await daemon.ctl(["replay", String(first)])
        #expect(replay.status == 0 && replay.stdout.contains("state \(first) sent to debugger app at"), "\(replay)")
        #expect(try await app.exitStatus(within: .seconds(20)) == 0, "app: \(app.stdout) \(app.stderr)")
        #expect(Self.received(app) == [Self.states[0]])

        let sessions = try await daemon.ctl(["sessions", "--json"])
        let session = try JSONSerialization.jsonObject(with: Data(sessions.stdout.utf8)) as? [String: Any]
        #expect(session?["kind"] as? String == "original" && session?["entryCount"] as? Int == 3, "\(sessions.stdout)")
        #expect(try await daemon.stop() == 0)
    }

    @Test("the Swift client records a state with its screenshot; a replay reaches its restore handler")
    func swiftClientEndToEnd() async throws {
        struct AppState: Codable, Sendable, Equatable {
            var count: Int
            var title: String
        }
        let daemon = try await ParleydProcess.start(staticPeer: nil)
        let restored = AsyncStream<AppState>.makeStream()
        let debugger = RemoteDebugger<AppState, String>(
            configuration: .init(appName: "swift-app", debugger: .endpoint(host: "127.0.0.1", port: daemon.port), trust: .anyOpen)
        )
        debugger.onRestore { state in restored.continuation.yield(state) }
        try debugger.start()
        debugger.write(action: "start", state: AppState(count: 1, title: "one"), snapshot: Data(Self.png))
        debugger.write(action: "increment", state: AppState(count: 2, title: "one"), snapshot: nil)
        // A "screenshot" that is not a PNG: the state is kept, the bytes are not (they would be served as image/png).
        debugger.write(action: "jpeg", state: AppState(count: 3, title: "one"), snapshot: Data([0xFF, 0xD8, 0xFF, 0xE0, 0, 0x10]))
        let entries = try await Self.waitForHistory(daemon, count: 3)
        let first = try #require(entries.first?["sequence"] as? Int)
        #expect(entries.first?["screenshotSize"] as? Int == Self.png.count)
        #expect(entries.last?["action"] as? String == "jpeg")
        #expect(entries.last?["screenshotSize"] as? Int == 0)
        _ = try await daemon.waitForLine(containing: "screenshot is not a PNG")

        let imageFile = daemon.directory.url.appendingPathComponent("swift.png")
        #expect(try await daemon.ctl(["show", String(first), "--image", imageFile.path]).status == 0)
        #expect(try Data(contentsOf: imageFile) == Data(Self.png))

        let diff = try await daemon.ctl(["diff", String(first + 1)])
        #expect(diff.status == 0 && diff.stdout.contains("count: 1 → 2"), "\(diff)")
        // The same shape as the web API's /api/diff: the two entries and the changes, each path also as text.
        let json = try await daemon.ctl(["diff", String(first + 1), "--json"])
        let report = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any], "\(json)")
        #expect(Set(report.keys) == ["from", "to", "changes"])
        let change = try #require((report["changes"] as? [[String: Any]])?.first)
        #expect(change["pathText"] as? String == "count")
        #expect(change["path"] as? [String] == ["count"])
        #expect(change["kind"] as? String == "changed")

        let replay = try await daemon.ctl(["replay", String(first)])
        #expect(replay.status == 0 && replay.stdout.contains("sent to swift-app"), "\(replay)")
        var iterator = restored.stream.makeAsyncIterator()
        #expect(await iterator.next() == AppState(count: 1, title: "one"))
        await debugger.stop()
        #expect(try await daemon.stop() == 0)
    }

    @Test("replay reaches only the chosen app: its own session's by default, --to one by id, --all every app")
    func replayTargets() async throws {
        let daemon = try await ParleydProcess.start(staticPeer: nil)
        let alpha = try Self.originalApp(port: daemon.port, sends: [("alpha", Self.states[0], [])], expect: 3, timeout: 40)
        _ = try await Self.waitForHistory(daemon, count: 1)
        let bravo = try Self.originalApp(port: daemon.port, sends: [("bravo", Self.states[1], [])], expect: 2, timeout: 40)
        let entries = try await Self.waitForHistory(daemon, count: 2)
        let alphaEntry = try #require(entries.first { $0["action"] as? String == "alpha" }?["sequence"] as? Int)
        let bravoEntry = try #require(entries.first { $0["action"] as? String == "bravo" }?["sequence"] as? Int)

        // Default: the app of the entry's own session only.
        #expect(try await daemon.ctl(["replay", String(alphaEntry)]).status == 0)
        try await Self.waitForReceived(alpha, count: 1)
        // --to: bravo, chosen by a prefix of its peer id (from its session).
        let bravoSessionID = try #require(entries.first { $0["action"] as? String == "bravo" }?["session"] as? Int)
        let sessions = try await daemon.ctl(["sessions", "--json"]).stdout.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        let bravoID = try #require(sessions.first { $0["id"] as? Int == bravoSessionID }?["peerID"] as? String)
        let toBravo = try await daemon.ctl(["replay", String(alphaEntry), "--to", String(bravoID.prefix(8))])
        #expect(toBravo.status == 0, "\(toBravo)")
        try await Self.waitForReceived(bravo, count: 1)
        #expect(Self.received(alpha).count == 1, "alpha got a state meant for bravo")
        // --all: both.
        #expect(try await daemon.ctl(["replay", String(bravoEntry), "--all"]).status == 0)
        #expect(try await bravo.exitStatus(within: .seconds(20)) == 0)
        try await Self.waitForReceived(alpha, count: 2)
        #expect(Self.received(alpha) == [Self.states[0], Self.states[1]])
        #expect(Self.received(bravo) == [Self.states[0], Self.states[1]])
        #expect(try await daemon.stop() == 0)
    }

    @Test("the history survives a restart and a SIGKILL; the session left open is closed")
    func survivesRestartAndKill() async throws {
        let daemon = try await ParleydProcess.start(staticPeer: nil)
        let app = try Self.originalApp(port: daemon.port, sends: [("one", Self.states[0], Self.png), ("two", Self.states[1], [])], expect: 0)
        _ = try await Self.waitForHistory(daemon, count: 2)
        _ = try await app.exitStatus(within: .seconds(10))
        #expect(try await daemon.stop() == 0)

        let restarted = try await ParleydProcess.start(staticPeer: nil, in: daemon.directory)
        let kept = try await Self.history(restarted)
        #expect(kept.map { $0["action"] as? String } == ["one", "two"])
        let app2 = try Self.originalApp(port: restarted.port, sends: [("three", Self.states[2], Self.png)], expect: 1, timeout: 60)
        _ = try await Self.waitForHistory(restarted, count: 3)
        kill(restarted.child.process.processIdentifier, SIGKILL)
        _ = try await restarted.child.exitStatus(within: .seconds(10))
        _ = try await app2.exitStatus(within: .seconds(70))

        let afterKill = try await ParleydProcess.start(staticPeer: nil, in: daemon.directory)
        let entries = try await Self.history(afterKill)
        #expect(entries.map { $0["action"] as? String } == ["one", "two", "three"])
        let shown = try await afterKill.ctl(["show", String(try #require(entries.last?["sequence"] as? Int)), "--state"])
        #expect(shown.stdout == Self.states[2] + "\n")
        let sessions = try await afterKill.ctl(["sessions", "--json"]).stdout.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        #expect(sessions.count == 2 && sessions.allSatisfy { $0["ended"] != nil }, "\(sessions)")
        #expect(try await afterKill.stop() == 0)
    }

    @Test("retention keeps the newest entries; named filters and patterns hide actions; an unknown filter is an error")
    func retentionAndFilters() async throws {
        let config = #"{"historyMaxEntries": 3, "actionFilters": {"ticks": "tick*", "quiet": {"allExcept": [{"filter": "ticks"}]}}}"#
        let daemon = try await ParleydProcess.start(staticPeer: nil, config: config)
        let sends = ["load", "tick.1", "add", "tick.2", "rename"].enumerated().map { index, action in
            (action, #"{"n":\#(index)}"#, [UInt8]())
        }
        let app = try Self.originalApp(port: daemon.port, sends: sends, expect: 0)
        #expect(try await app.exitStatus(within: .seconds(20)) == 0)
        _ = try await Self.waitForHistory(daemon, count: 1, ["--action", "rename"])
        #expect(try await Self.history(daemon).map { $0["action"] as? String } == ["add", "tick.2", "rename"])
        #expect(try await Self.history(daemon, ["--filter", "quiet"]).map { $0["action"] as? String } == ["add", "rename"])
        #expect(try await Self.history(daemon, ["--action", "tick*"]).map { $0["action"] as? String } == ["tick.2"])
        let unknown = try await daemon.ctl(["history", "--filter", "nope"])
        #expect(unknown.status == 1 && unknown.stderr.contains("nope"), "\(unknown)")
        // A failure prints nothing on standard output, not even the table's heading.
        #expect(unknown.stdout.isEmpty, "\(unknown)")
        let noSession = try await daemon.ctl(["history", "--session", "999", "--follow"])
        #expect(noSession.status != 0 && noSession.stdout.isEmpty, "\(noSession)")
        let listed = try await daemon.ctl(["history"])
        #expect(listed.stdout.hasPrefix("SEQ"), "\(listed)")
        let filters = try await daemon.ctl(["filters"])
        #expect(filters.stdout.contains("quiet:") && filters.stdout.contains("ticks:"), "\(filters)")
        #expect(try await daemon.stop() == 0)
    }

    @Test("housekeeping: history --last and --since, sessions delete (an open one refused) and prune; errors are one line, causes under --verbose")
    func housekeepingAndErrors() async throws {
        let daemon = try await ParleydProcess.start(staticPeer: nil)
        let sends = (0..<5).map { ("step \($0)", #"{"n":\#($0)}"#, [UInt8]()) }
        let app = try Self.originalApp(port: daemon.port, sends: sends, expect: 0)
        #expect(try await app.exitStatus(within: .seconds(20)) == 0)
        _ = try await Self.waitForHistory(daemon, count: 5)
        #expect(try await Self.history(daemon, ["--last", "2"]).map { $0["action"] as? String } == ["step 3", "step 4"])
        #expect(try await Self.history(daemon, ["--since", "10m"]).count == 5)
        #expect(try await Self.history(daemon, ["--since", "2999-01-01T00:00:00Z"]).isEmpty)
        let badTime = try await daemon.ctl(["history", "--since", "teatime"])
        #expect(badTime.status == 2 && badTime.stderr.hasPrefix("parleyctl: error: --since: \"teatime\" is not a time"), "\(badTime)")

        // An error parleyd answers with: its own words on one line; no plumbing, no library type names.
        let missing = try await daemon.ctl(["show", "99999"])
        #expect(missing.status == 1)
        #expect(missing.stderr == "parleyctl: error: there is no entry 99999 in the history (it may have been dropped by retention; parleyctl history lists what is kept)\n", "\(missing.stderr)")
        let verbose = try await daemon.ctl(["show", "99999", "--verbose"])
        #expect(verbose.stderr.contains("\n  cause: the peer answered with error code 106 (no-such-entry)"), "\(verbose.stderr)")
        // parleyd says there is nothing before the first entry; parleyctl adds how to diff it anyway.
        let oldest = try #require(try await Self.history(daemon, []).first)
        let first = try #require(oldest["sequence"] as? Int), session = try #require(oldest["session"] as? Int)
        let alone = try await daemon.ctl(["diff", String(first)])
        #expect(alone.status == 1)
        #expect(
            alone.stderr == "parleyctl: error: entry \(first) is the first of session \(session): there is nothing before it to compare with; give both entries (parleyctl diff A B)\n",
            "\(alone.stderr)")

        // The app has gone: its session ended; a session still recording cannot be deleted.
        let sessions = try await daemon.ctl(["sessions", "--json"]).stdout.split(separator: "\n")
            .compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        let id = try #require(sessions.first?["id"] as? Int)
        #expect(sessions.first?["host"] as? String == "127.0.0.1")
        let listener = try Self.originalApp(port: daemon.port, sends: [("open", "{}", [])], expect: 1, timeout: 60)
        let open = try #require(try await Self.waitForHistory(daemon, count: 6).last?["session"] as? Int)
        let refused = try await daemon.ctl(["sessions", "delete", String(open)])
        #expect(refused.status == 1 && refused.stderr.contains("is still recording"), "\(refused)")
        // Completion asks the running parleyd (the shell passes the words typed so far, --socket among them).
        let completion = try await ChildProcess.run(
            "parleyctl", ["---completion", "sessions", "delete", "--", "positional@0", "5", "0", "parleyctl", "sessions", "delete", "--socket", daemon.controlSocket, ""])
        #expect(Set(completion.stdout.split(separator: "\n").map(String.init)) == [String(id), String(open)], "\(completion)")
        // Colour on a terminal only, and never with NO_COLOR or --no-color.
        let parleyctl = PeerProcess.productsDirectory.appendingPathComponent("parleyctl").path
        func onTerminal(_ extra: String, noColor: Bool = false, pager: String = "cat") async throws -> String {
            // A terminal as people have one: TERM names it, NO_COLOR only when the person set it (the test runner's
            // own environment may have either). The pager is one that marks what went through it.
            let environment = "env -u NO_COLOR TERM=xterm-256color PAGER='\(pager)'" + (noColor ? " NO_COLOR=1" : "")
            let child = try ChildProcess("/usr/bin/script", ["-qec", "\(environment) \(parleyctl) sessions --socket \(daemon.controlSocket) \(extra)", "/dev/null"])
            _ = try await child.exitStatus(within: .seconds(20))
            return child.stdout
        }
        let coloured = try await onTerminal("")
        #expect(coloured.contains("\u{1B}[1mSESSION"), "\(coloured.debugDescription)")
        #expect(try await !onTerminal("--no-color").contains("\u{1B}["))
        #expect(try await !onTerminal("", noColor: true).contains("\u{1B}["))
        #expect(try await !daemon.ctl(["sessions"]).stdout.contains("\u{1B}["), "piped output has no colour")
        // Paging on a terminal, through $PAGER, colours kept; not with --no-pager; never into a pipe.
        let paged = try await onTerminal("", pager: "sed s/^/PAGED:/")
        #expect(paged.contains("PAGED:\u{1B}[1mSESSION"), "\(paged.debugDescription)")
        #expect(try await !onTerminal("--no-pager", pager: "sed s/^/PAGED:/").contains("PAGED:"))
        let piped = try ChildProcess("parleyctl", ["sessions", "--socket", daemon.controlSocket], environment: ["PAGER": "sed s/^/PAGED:/"])
        #expect(try await piped.exitStatus(within: .seconds(20)) == 0)
        #expect(!piped.stdout.contains("PAGED:") && piped.stdout.contains("SESSION"), "\(piped.stdout)")
        // Times for people are local, with the offset; JSON stays RFC 3339 in UTC.
        let inKolkata = try ChildProcess("parleyctl", ["sessions", "--socket", daemon.controlSocket], environment: ["TZ": "Asia/Kolkata"])
        #expect(try await inKolkata.exitStatus(within: .seconds(20)) == 0)
        #expect(inKolkata.stdout.range(of: #"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\+05:30"#, options: .regularExpression) != nil, "\(inKolkata.stdout)")
        let json = try await daemon.ctl(["sessions", "--json"]).stdout
        #expect(json.range(of: #"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z"#, options: .regularExpression) != nil, "\(json)")

        let deleted = try await daemon.ctl(["sessions", "delete", String(id)])
        #expect(deleted.status == 0 && deleted.stdout == "deleted session \(id)\n", "\(deleted)")
        #expect(try await Self.history(daemon).map { $0["action"] as? String } == ["open"])
        let pruned = try await daemon.ctl(["sessions", "prune", "--older-than", "0s"])
        #expect(pruned.status == 0 && pruned.stdout.contains("nothing deleted"), "\(pruned)")
        _ = try await listener.stop()

        let web = try await daemon.ctl(["web"])
        // The address with this run's sign-in token (64 hex digits).
        #expect(web.status == 0 && web.stdout.hasPrefix("http://127.0.0.1:"), "\(web)")
        #expect(web.stdout.range(of: #"/\?token=[0-9a-f]{64}\n$"#, options: .regularExpression) != nil, "\(web)")
        #expect(try await daemon.stop() == 0)
    }

    @Test("bad input stores nothing: a state that is not JSON, a missing field, a 206 frame over the size limit")
    func badInput() async throws {
        let daemon = try await ParleydProcess.start(staticPeer: nil, arguments: ["--max-frame-size", "4096"])
        // A good app keeps recording while the bad ones are turned away.
        let good = try Self.originalApp(port: daemon.port, sends: [("good", Self.states[0], [])], expect: 0)
        _ = try await Self.waitForHistory(daemon, count: 1)

        let notJSON = try Self.rawFrameApp(port: daemon.port, body: #"{"state": {"a": 1,, }, "action": "bad", "imageData": ""}"#)
        let missing = try Self.rawFrameApp(port: daemon.port, body: #"{"state": {"a": 1}, "imageData": ""}"#)
        let huge = try Self.rawFrameApp(port: daemon.port, body: #"{"state": ""# + String(repeating: "x", count: 8000) + #"", "action": "big", "imageData": ""}"#)
        for app in [notJSON, missing, huge] { _ = try await app.exitStatus(within: .seconds(20)) }
        _ = try await daemon.child.waitFor(in: \.stderr) { $0.contains("original debugger framing not understood") && $0.contains("action") ? true : nil }
        _ = try await daemon.child.waitFor(in: \.stderr) { $0.contains("exceeds the maximum of 4096 bytes") ? true : nil }

        let after = try Self.originalApp(port: daemon.port, sends: [("after", Self.states[1], [])], expect: 0)
        let entries = try await Self.waitForHistory(daemon, count: 2)
        #expect(entries.map { $0["action"] as? String } == ["good", "after"])
        _ = try await good.exitStatus(within: .seconds(10))
        _ = try await after.exitStatus(within: .seconds(10))
        #expect(try await daemon.stop() == 0)
    }

    @Test("export then import: a new session with the same actions, states byte for byte and screenshots")
    func exportImport() async throws {
        let daemon = try await ParleydProcess.start(staticPeer: nil)
        let app = try Self.originalApp(port: daemon.port, sends: [("one", Self.states[0], Self.png), ("two", Self.states[1], [])], expect: 0)
        #expect(try await app.exitStatus(within: .seconds(20)) == 0)
        let entries = try await Self.waitForHistory(daemon, count: 2)
        let session = try #require(entries.first?["session"] as? Int)
        let file = daemon.directory.url.appendingPathComponent("export.jsonl")
        let exported = try await daemon.ctl(["export", String(session), file.path])
        #expect(exported.status == 0, "\(exported)")
        let overwrite = try await daemon.ctl(["export", String(session), file.path])
        #expect(overwrite.status == 1 && overwrite.stderr.contains("exists; give --force"), "\(overwrite)")
        #expect(try await daemon.ctl(["export", String(session), file.path, "--force"]).status == 0)
        let text = try String(contentsOf: file, encoding: .utf8)
        #expect(text.contains(Self.states[0]), "the state is embedded verbatim")
        // `-` is standard output: the same bytes, and no file named "-".
        let toStdout = try await daemon.ctl(["export", String(session), "-"])
        #expect(toStdout.status == 0 && toStdout.stdout == text, "\(toStdout.stderr)")
        #expect(!FileManager.default.fileExists(atPath: daemon.directory.file("-")))

        let imported = try await daemon.ctl(["import", file.path, "--json"])
        #expect(imported.status == 0, "\(imported)")
        let summary = try JSONSerialization.jsonObject(with: Data(imported.stdout.utf8)) as? [String: Any]
        let newSession = try #require(summary?["id"] as? Int)
        #expect(newSession != session && summary?["imported"] as? Bool == true)
        let copies = try await Self.history(daemon, ["--session", String(newSession)])
        #expect(copies.map { $0["action"] as? String } == ["one", "two"])
        let state = try await daemon.ctl(["show", String(try #require(copies.first?["sequence"] as? Int)), "--state"])
        #expect(state.stdout == Self.states[0] + "\n")

        // The table stays in columns with the original framing's long app name and the imported kind.
        let table = try await daemon.ctl(["sessions"]).stdout
        #expect(table.contains("debugger app at 127.0.0.1:") && table.contains("original (imported)"), "\(table)")
        #expect(columnsLineUp(table, headings: ["SESSION", "APP", "HOST", "KIND", "STARTED", "ENDED", "ENTRIES", "LOGS", "SPANS", "SIZE"]), "\(table)")

        // The same file again: nothing new, and parleyctl says where it already is.
        let again = try await daemon.ctl(["import", file.path])
        #expect(again.status == 0 && again.stdout.contains("imported before as session \(newSession)"), "\(again)")
        // And from standard input (`-`), the same answer.
        let parleyctl = PeerProcess.productsDirectory.appendingPathComponent("parleyctl").path
        let fromStdin = try await ChildProcess.run("/bin/sh", ["-c", #""$0" import - --socket "$1" < "$2""#, parleyctl, daemon.controlSocket, file.path])
        #expect(fromStdin.status == 0 && fromStdin.stdout.contains("imported before as session \(newSession)"), "\(fromStdin)")
        #expect(try await daemon.ctl(["sessions", "--json"]).stdout.split(separator: "\n").count == 2)

        // A broken copy of that same session: still read to its end, an error naming the line, nothing added; and
        // the same for another peer's broken file, whose entries were written before the bad line and are removed.
        let otherPeer = text.replacingOccurrences(of: #""peerID":""#, with: #""peerID":"other-"#)
        for source in [text, otherPeer] {
            try Data((source.split(separator: "\n").prefix(2).joined(separator: "\n") + "\n{not json}\n").utf8).write(to: file)
            let broken = try await daemon.ctl(["import", file.path])
            #expect(broken.status == 1 && broken.stderr.contains("line 3"), "\(broken)")
            #expect(broken.stdout.isEmpty, "\(broken)")
        }
        #expect(try await daemon.ctl(["sessions", "--json"]).stdout.split(separator: "\n").count == 2)
        // The failed imports used up no numbers: the next session is the one after the last seen.
        try Data(otherPeer.utf8).write(to: file)
        let next = try await daemon.ctl(["import", file.path])
        #expect(next.status == 0 && next.stdout.contains("imported as session \(newSession + 1) "), "\(next)")
        #expect(try await daemon.stop() == 0)
    }

    @Test("a failed export keeps an existing FILE as it was and creates none; export - into a closed pipe ends quietly with status 0")
    func exportFailureAndClosedPipe() async throws {
        let daemon = try await ParleydProcess.start(staticPeer: nil)
        let app = try Self.originalApp(port: daemon.port, sends: [("one", Self.states[0], Self.png)], expect: 0)
        #expect(try await app.exitStatus(within: .seconds(20)) == 0)
        let session = try #require(try await Self.waitForHistory(daemon, count: 1).first?["session"] as? Int)
        let exports = daemon.directory.url.appendingPathComponent("exports")
        try FileManager.default.createDirectory(at: exports, withIntermediateDirectories: true)

        // No such session: parleyd refuses after parleyctl has chosen its file. --force must not have cost the old one.
        let kept = exports.appendingPathComponent("kept.jsonl")
        try Data("the previous export\n".utf8).write(to: kept)
        let forced = try await daemon.ctl(["export", String(session + 1000), kept.path, "--force"])
        #expect(forced.status == 1, "\(forced)")
        #expect(try String(contentsOf: kept, encoding: .utf8) == "the previous export\n")
        let fresh = exports.appendingPathComponent("fresh.jsonl")
        let failed = try await daemon.ctl(["export", String(session + 1000), fresh.path])
        #expect(failed.status == 1, "\(failed)")
        #expect(!FileManager.default.fileExists(atPath: fresh.path), "a failed export left an empty file")
        #expect(try FileManager.default.contentsOfDirectory(atPath: exports.path) == ["kept.jsonl"], "no temporary file is left")

        // A good export over it with --force: the whole new content, in the old file's place.
        let replaced = try await daemon.ctl(["export", String(session), kept.path, "--force"])
        #expect(replaced.status == 0, "\(replaced)")
        #expect(try String(contentsOf: kept, encoding: .utf8).contains(Self.states[0]))
        #expect(try FileManager.default.contentsOfDirectory(atPath: exports.path) == ["kept.jsonl"])

        // Standard output whose reader has gone (`parleyctl export 3 - | head -0`): like any other output, a quiet end.
        let output = Pipe.forChild()
        try output.fileHandleForReading.close()
        let ended = try await ParleyCtlTests.runParleyctl(
            ["export", String(session), "-", "--socket", daemon.controlSocket], standardOutput: output.fileHandleForWriting
        )
        #expect(ended.reason == .exit && ended.status == 0, "status \(ended.status), \(ended.reason)")
        #expect(ended.stderr.isEmpty, "\(ended.stderr)")
        #expect(try await daemon.stop() == 0)
    }

    @Test("an export to a file ended by SIGINT removes its temporary file, creates no FILE, says so and exits with 130")
    func exportInterrupted() async throws {
        let daemon = try await ParleydProcess.start(staticPeer: nil)
        let exports = daemon.directory.url.appendingPathComponent("exports")
        try FileManager.default.createDirectory(at: exports, withIntermediateDirectories: true)
        // parleyd stopped: parleyctl creates its temporary file, then waits for parleyd's side of the handshake,
        // so the signal lands while the export is under way, whatever the timing.
        kill(daemon.pid, SIGSTOP)
        defer { kill(daemon.pid, SIGCONT) }
        let target = exports.appendingPathComponent("interrupted.jsonl").path
        let parleyctl = try ChildProcess("parleyctl", ["export", "1", target, "--socket", daemon.controlSocket])
        let started = await eventually(timeout: .seconds(20)) {
            ((try? FileManager.default.contentsOfDirectory(atPath: exports.path)) ?? []).contains { $0.hasPrefix(".interrupted.jsonl.parleyctl-") }
        }
        #expect(started, "parleyctl never created its temporary file")
        kill(parleyctl.pid, SIGINT)
        let status = try await parleyctl.exitStatus(within: .seconds(20))
        kill(daemon.pid, SIGCONT)
        #expect(status == 128 + SIGINT, "\(parleyctl.stderr)")
        #expect(parleyctl.stderr.contains("\(target) was not written"), "\(parleyctl.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: exports.path).isEmpty, "nothing is left behind")
        #expect(try await daemon.stop() == 0)
    }

    // MARK: - Helpers

    /// An app that writes one 206 frame with this exact body and closes.
    static func rawFrameApp(port: Int, body: String) throws -> ChildProcess {
        let script = """
            import socket, struct, sys
            body = sys.argv[2].encode("utf-8")
            s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
            s.sendall(bytes([206]) + struct.pack("<i", len(body)) + body)
            s.settimeout(5)
            try:
                s.recv(1)
            except OSError:
                pass
            """
        return try ChildProcess(try python(), ["-c", script, String(port), body])
    }

}
