import Foundation
import ParleyCommandLine
import ListrCommands
import ParleyTestSupport
import Testing

/// parleyctl and the Listr example as a user runs them: separate processes on loopback, with discovery off (the
/// tests never touch avahi-daemon; discovery is covered by the namespace lab tests of ParleyDiscoveryLabTests).
@Suite(.serialized, .timeLimit(.minutes(2)))
struct ParleyCtlTests {
    /// A running `listr-example` on 127.0.0.1, any free port, with its list in a temporary file.
    final class Listr: Sendable {
        let child: ChildProcess
        let port: Int
        let dataFile: URL

        init(port requested: Int = 0, name: String = "listr", arguments extra: [String] = []) async throws {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("listr-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            dataFile = directory.appendingPathComponent("list.json")
            child = try ChildProcess(
                "listr-example",
                ["--no-discovery", "--port", String(requested), "--host", "127.0.0.1", "--data", dataFile.path, "--name", name] + extra,
                environment: ["XDG_STATE_HOME": directory.path]
            )
            port = try await child.waitFor { number(after: "listr ready on port ", in: $0) }
        }

        var peer: [String] { ["--direct", "--peer", "127.0.0.1:\(port)"] }

        func send(_ arguments: [String]) async throws -> (status: Int32, stdout: String, stderr: String) {
            try await ChildProcess.run("parleyctl", ["send"] + arguments + peer)
        }

        func stop() async throws {
            #expect(try await child.stop(SIGTERM) == 0)
        }
    }

    @Test("send --reply reaches the example app: add, list, dump to a file, replace")
    func sendToListr() async throws {
        let listr = try await Listr()
        #expect(listr.child.stdout.contains("listr ready on port \(listr.port) as listr"))

        let added = try await listr.send(["AddItemCommand", #"{"title":"milk"}"#, "--reply"])
        #expect(added.status == 0, "\(added)")
        #expect(added.stdout == "added \"milk\" (1 item on the list)\n")

        let listed = try await listr.send(["ListItemsCommand", "--reply"])
        #expect(listed.status == 0, "\(listed)")
        #expect(listed.stdout == "[ ] milk\n")

        let dump = listr.dataFile.deletingLastPathComponent().appendingPathComponent("dump.json")
        let dumped = try await listr.send(["DumpDatabaseCommand", "--reply", "--output", dump.path])
        #expect(dumped.status == 0, "\(dumped)")
        let database = try ListrDatabase.decode(Data(contentsOf: dump))
        #expect(database.items == [ListrItem(title: "milk")])
        #expect(dumped.stdout.contains("wrote \(try Data(contentsOf: dump).count) bytes to \(dump.path)"))
        // The app's own file holds the same list.
        #expect(try ListrDatabase.decode(Data(contentsOf: listr.dataFile)) == database)

        // An existing file is kept unless --force is given, in the words export and show --image use; the refusal
        // comes before the request is sent.
        let dumpedBytes = try Data(contentsOf: dump)
        try Data("keep me".utf8).write(to: dump)
        let kept = try await listr.send(["DumpDatabaseCommand", "--reply", "--output", dump.path])
        #expect(kept.status == 1 && kept.stderr.contains("\(dump.path) exists; give --force to overwrite it"), "\(kept)")
        #expect(try Data(contentsOf: dump) == Data("keep me".utf8))
        let forced = try await listr.send(["DumpDatabaseCommand", "--reply", "--output", dump.path, "--force"])
        #expect(forced.status == 0, "\(forced)")
        #expect(try Data(contentsOf: dump) == dumpedBytes)
        // `-` is standard output: the bytes alone (no "wrote …" line, no JSON line), and no file named "-".
        for extra in [[], ["--json"]] {
            let piped = try await listr.send(["DumpDatabaseCommand", "--reply", "--output", "-"] + extra)
            #expect(piped.status == 0 && Data(piped.stdout.utf8) == dumpedBytes, "\(extra): \(piped)")
        }
        #expect(!FileManager.default.fileExists(atPath: FileManager.default.currentDirectoryPath + "/-"))
        let forceAlone = try await listr.send(["DumpDatabaseCommand", "--reply", "--force"])
        #expect(forceAlone.status == 2 && forceAlone.stderr.contains("--force only applies with --output"), "\(forceAlone)")

        // Without --output, the tool says how many bytes came and how to keep them.
        let unsaved = try await listr.send(["DumpDatabaseCommand", "--reply"])
        #expect(unsaved.status == 0 && unsaved.stdout.contains("use --output FILE"), "\(unsaved)")

        // Replace the list with the dump plus one item (the listen test covers a payload from standard input).
        let replacement = ListrDatabase(items: database.items + [ListrItem(title: "eggs", done: true)])
        let payload = String(decoding: try JSONEncoder().encode(ReplaceDatabaseCommand(data: try replacement.encoded())), as: UTF8.self)
        let replaced = try await listr.send(["ReplaceDatabaseCommand", payload, "--reply"])
        #expect(replaced.status == 0 && replaced.stdout == "replaced the list: 2 items\n", "\(replaced)")
        let relisted = try await listr.send(["ListItemsCommand", "{}", "--reply", "--json"])
        #expect(relisted.status == 0, "\(relisted)")
        let line = try JSONSerialization.jsonObject(with: Data(relisted.stdout.utf8)) as? [String: Any]
        #expect(line?["type"] as? String == "CLIResponse")
        #expect((line?["payload"] as? [String: Any])?["message"] as? String == "[ ] milk\n[✓] eggs")

        // One-way send: no reply asked, exit 0 once it is on its way; the app handles it.
        let oneWay = try await listr.send(["AddItemCommand", #"{"title":"bread"}"#])
        #expect(oneWay.status == 0 && oneWay.stdout.hasPrefix("sent AddItemCommand (17 bytes) to listr"), "\(oneWay)")
        _ = try await listr.child.waitFor(timeout: .seconds(10)) { $0.contains("added \"bread\"") ? true : nil }

        // An error reply from the app (a handler that throws) is an error: status 1, with the app's reason.
        let refused = try await listr.send(["AddItemCommand", #"{"title":" "}"#, "--reply"])
        #expect(refused.status == 1 && refused.stderr.contains("the title is empty"), "\(refused)")

        try await listr.stop()
    }

    @Test("peers --direct lists the example app with its accepted types")
    func peersDirect() async throws {
        let listr = try await Listr()
        let listed = try await ChildProcess.run("parleyctl", ["peers", "--wait", "10", "--json"] + listr.peer)
        #expect(listed.status == 0, "\(listed)")
        let peer = try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [String: Any]
        #expect(peer?["name"] as? String == "listr")
        #expect(peer?["address"] as? String == "127.0.0.1:\(listr.port)")
        // Its commands, and its debug drawer's requests.
        #expect(
            Set(peer?["accepts"] as? [String] ?? [])
                == ["AddItemCommand", "ListItemsCommand", "DumpDatabaseCommand", "ReplaceDatabaseCommand", "parley.drawer.Set", "parley.drawer.Invoke"])
        let table = try await ChildProcess.run("parleyctl", ["peers", "--wait", "10"] + listr.peer)
        #expect(table.status == 0 && table.stdout.hasPrefix("NAME") && table.stdout.contains("listr"), "\(table)")
        try await listr.stop()
    }

    @Test("a reader that went away (parleyctl … | head) ends parleyctl quietly with status 0, not a crash")
    func closedStandardOutput() async throws {
        let listr = try await Listr()
        // The read end is closed before parleyctl starts: its first write to standard output fails, every time.
        let output = Pipe.forChild()
        try output.fileHandleForReading.close()
        let ended = try await Self.runParleyctl(["send", "ListItemsCommand", "--reply"] + listr.peer, standardOutput: output.fileHandleForWriting)
        #expect(ended.reason == .exit && ended.status == 0, "status \(ended.status), \(ended.reason)")
        #expect(ended.stderr.isEmpty, "\(ended.stderr)")
        try await listr.stop()
    }

    @Test("output that cannot be written for any other reason than a reader gone (a full disk) is an error: status 1, saying why")
    func fullStandardOutput() async throws {
        let full = try #require(FileHandle(forWritingAtPath: "/dev/full"))
        let ended = try await Self.runParleyctl(["secret", "generate"], standardOutput: full)
        #expect(ended.status == 1, "status \(ended.status); \(ended.stderr)")
        #expect(ended.stderr.contains("cannot write to standard output: No space left on device"), "\(ended.stderr)")
    }

    /// Runs parleyctl with its standard output going to `output` (this process's copy of it is closed once parleyctl
    /// runs), and waits for it to end: how, with what status, and what it wrote to standard error.
    static func runParleyctl(
        _ arguments: [String], standardOutput output: FileHandle
    ) async throws -> (reason: Process.TerminationReason, status: Int32, stderr: String) {
        let errors = Pipe.forChild()
        let process = Process()
        process.executableURL = PeerProcess.productsDirectory.appendingPathComponent("parleyctl")
        process.arguments = arguments
        process.standardOutput = output
        process.standardError = errors
        let exited = AsyncStream<Int32>.makeStream()
        process.terminationHandler = { exited.continuation.yield($0.terminationStatus) }
        try process.runWithDefaultSignalMask()
        try output.close()
        try errors.fileHandleForWriting.close()
        var statuses = exited.stream.makeAsyncIterator()
        let status = await statuses.next() ?? -1
        let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        return (process.terminationReason, status, stderr)
    }

    @Test("--version prints the release parleyd reports too, with status 0")
    func version() async throws {
        let result = try await ChildProcess.run("parleyctl", ["--version"])
        #expect(result.status == 0 && result.stdout == ParleyRelease.version + "\n", "\(result)")
    }

    @Test("send with no peer anywhere exits 3 after --wait-peer, naming what it waited for")
    func noPeer() async throws {
        let started = ContinuousClock.now
        let result = try await ChildProcess.run("parleyctl", ["send", "AddItemCommand", "{}", "--direct", "--peer", "127.0.0.1:1", "--wait-peer", "1"])
        #expect(result.status == 3, "\(result)")
        #expect(result.stderr.contains("no Parley peer at 127.0.0.1:1 connected within 1 s"), "\(result.stderr)")
        #expect(ContinuousClock.now - started < .seconds(10))
    }

    @Test("no reply within --reply-timeout exits 4, saying --reply-timeout waits longer")
    func replyTimeout() async throws {
        let peer = try ChildProcess("parley-test-peer", ["serve"])
        let port = try await peer.waitFor { number(after: "READY port=", in: $0) }
        let started = ContinuousClock.now
        let result = try await ChildProcess.run(
            "parleyctl",
            ["send", "SlowRequest", #"{"milliseconds":3000}"#, "--reply", "--reply-timeout", "0.5", "--direct", "--peer", "127.0.0.1:\(port)"]
        )
        let took = ContinuousClock.now - started
        #expect(result.status == 4, "\(result)")
        // Not a timing test: the peer, busy with the request, does not answer parleyctl's goodbye before 3 s, and
        // parleyctl used to wait for it up to its 2 s flush.
        #expect(took < .milliseconds(1_800), "parleyctl took \(took) to give up")
        // It names the option that waits longer (--reply-timeout; send has no --timeout), and the time it waited.
        #expect(result.stderr.contains("no reply to test.SlowRequest from "), "\(result.stderr)")
        #expect(result.stderr.contains("within 0.5 s; is the peer busy or stuck? --reply-timeout SECONDS waits longer"), "\(result.stderr)")
        #expect(!result.stderr.contains("--timeout "), "\(result.stderr)")
        #expect(try await peer.stop(SIGKILL) == 128 + SIGKILL)
    }

    @Test("a payload that is not JSON, and bad arguments, exit 2 before anything is sent")
    func usageErrors() async throws {
        let invalid = try await ChildProcess.run("parleyctl", ["send", "AddItemCommand", "milk", "--direct", "--peer", "127.0.0.1:1"])
        #expect(invalid.status == 2 && invalid.stderr.contains("is not valid JSON: 'milk'"), "\(invalid)")
        for arguments in [
            ["send"], ["send", "X", "--wait-peer", "0", "--direct"], ["send", "X", "--direct", "--peer", "nowhere"],
            ["listen", "--direct", "--port", "70000"], ["frobnicate"],
        ] {
            let result = try await ChildProcess.run("parleyctl", arguments)
            #expect(result.status == 2, "\(arguments): \(result)")
        }
    }

    @Test("listen --direct prints a message another process sends, as a JSON line, and exits 0 on SIGINT")
    func listenSeesMessage() async throws {
        let listener = try ChildProcess("parleyctl", ["listen", "--direct", "--type", "test.Note", "--no-discovery", "--json", "--name", "listener"])
        let port = try await listener.waitFor(in: \.stderr) { number(after: "on port ", in: $0) }

        // A second parleyctl sends to it; the short name resolves against the listener's accepted types, and
        // the payload (pretty JSON, from standard input) arrives unchanged apart from line breaks.
        let sender = try await ChildProcess.run(
            "/bin/sh",
            ["-c", #"printf '{"text": "hi",\n "n": 1}' | "$0" send Note - --direct --name sender --peer 127.0.0.1:$1"#,
             PeerProcessPath.parleyctl, "\(port)"]
        )
        #expect(sender.status == 0 && sender.stdout.hasPrefix("sent test.Note"), "\(sender)")

        let line = try await listener.waitFor(timeout: .seconds(10)) { $0.split(separator: "\n").first.map(String.init) }
        let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        #expect(object?["type"] as? String == "test.Note")
        #expect((object?["from"] as? [String: Any])?["name"] as? String == "sender")
        #expect((object?["payload"] as? [String: Any])?["text"] as? String == "hi")
        #expect(line.contains(#""payload":{"text": "hi", "n": 1}"#))
        #expect(try await listener.stop(SIGINT) == 0)
    }

    @Test("listen --direct without --type prints messages of any type")
    func listenAllTypes() async throws {
        let listener = try ChildProcess("parleyctl", ["listen", "--direct", "--no-discovery", "--name", "listener"])
        let port = try await listener.waitFor(in: \.stderr) { number(after: "on port ", in: $0) }
        let sender = try await ChildProcess.run(
            "parleyctl", ["send", "test.Anything", #"{"x": 1}"#, "--direct", "--name", "sender", "--peer", "127.0.0.1:\(port)"]
        )
        #expect(sender.status == 0, "\(sender)")
        let line = try await listener.waitFor(timeout: .seconds(10)) { $0.split(separator: "\n").first.map(String.init) }
        #expect(line.hasPrefix("test.Anything from sender"))
        #expect(line.hasSuffix(#"{"x": 1}"#))
        #expect(try await listener.stop(SIGINT) == 0)
    }

    @Test("--help lists the exit codes; completion scripts are generated from the parser and match completions/")
    func helpAndCompletions() async throws {
        let help = try await ChildProcess.run("parleyctl", ["--help"])
        #expect(help.status == 0)
        for line in ["0  success", "2  usage", "3  no matching peer", "4  no reply", "5  parleyd not reachable"] {
            #expect(help.stdout.contains(line), "\(line)")
        }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        for (shell, file) in [("bash", "parleyctl.bash"), ("zsh", "_parleyctl"), ("fish", "parleyctl.fish")] {
            let script = try await ChildProcess.run("parleyctl", ["--generate-completion-script", shell])
            #expect(script.status == 0 && script.stdout.contains("parleyctl"))
            let committed = try? String(contentsOf: root.appendingPathComponent("completions/\(file)"), encoding: .utf8)
            #expect(committed == script.stdout, "completions/\(file) is out of date: run scripts/generate-docs")
        }
    }
}

enum PeerProcessPath {
    static var parleyctl: String { PeerProcess.productsDirectory.appendingPathComponent("parleyctl").path }
}

/// Whether every row of a parleyctl table starts each column where its heading does (the first line is the
/// headings): a cell never runs into the next column.
func columnsLineUp(_ table: String, headings: [String]) -> Bool {
    let lines = table.split(separator: "\n").map { Array($0) }
    guard let header = lines.first, lines.count > 1 else { return false }
    let headerText = String(header)
    var starts: [Int] = []
    for heading in headings {
        guard let range = headerText.range(of: heading) else { return false }
        starts.append(headerText.distance(from: headerText.startIndex, to: range.lowerBound))
    }
    return lines.dropFirst().allSatisfy { row in
        starts.dropFirst().allSatisfy { start in
            start < row.count && row[start] != " " && row[start - 1] == " " && row[start - 2] == " "
        }
    }
}
