import Foundation
import NIOCore
import Parley
import ParleyControl
import ParleyTestSupport
import Testing

/// parleyctl through parleyd's control socket: a `listr-example` and a `parleyd` (static peer: the example) on
/// loopback, discovery off everywhere, the socket in a temporary directory. Every process is bounded in time.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct DaemonBackedTests {
    @Test("a second parleyd on the same data directory, or on the same control socket, refuses to start and says why; the first keeps serving")
    func oneInstance() async throws {
        let daemon = try await ParleydProcess.start(staticPeer: nil)
        let config = daemon.directory.file("parleyd.json")
        func second(socket: String, data: String) throws -> ParleydProcess {
            try ParleydProcess(
                arguments: ["--no-discovery", "--port", "0", "--name", "second", "--control-socket", socket, "--data-directory", data],
                environment: ["PARLEY_CONFIG": config], directory: daemon.directory)
        }
        let sameData = try second(socket: daemon.directory.file("other.sock"), data: daemon.directory.path)
        #expect(await sameData.waitForExit(timeout: .seconds(20)) == 1)
        let pid = daemon.pid
        // One line, under its own heading: who is in the way (the first parleyd's pid) and what to do.
        let refusal = sameData.log.split(separator: "\n").filter { $0.contains(" critical ") }
        #expect(refusal.count == 1, "\(sameData.log)")
        #expect(
            refusal.first?.contains(
                "parleyd cannot start: another parleyd (pid \(pid)) is using the data directory \(daemon.directory.path); stop it first"
            ) == true, "\(sameData.log)")
        #expect(!sameData.log.contains("debugger history"), "\(sameData.log)")

        let otherData = daemon.directory.file("other-data")
        let sameSocket = try second(socket: daemon.controlSocket, data: otherData)
        #expect(await sameSocket.waitForExit(timeout: .seconds(20)) == 1)
        // The socket names its server too (the kernel's SO_PEERCRED on a test connection).
        #expect(
            sameSocket.log.contains(
                "parleyd cannot start: another parleyd (pid \(pid)) is serving the control socket \(daemon.controlSocket); stop it first, "
                    + "or give this one a socket of its own (--control-socket) and a data directory of its own (--data-directory)"),
            "\(sameSocket.log)")

        let status = try await daemon.ctl(["status", "--json"])
        #expect(status.status == 0 && status.stdout.contains("testd"), "\(status)")
        #expect(try await daemon.stop() == 0)
    }

    @Test("another local user, without the control socket's group, can read through the web but change nothing; parleyctl web's link can")
    func localUserIsNotAnAdministrator() async throws {
        let daemon = try await ParleydProcess.start(staticPeer: nil, arguments: ["--web-listen", "127.0.0.1:0"])
        let web = try #require(daemon.webURL)
        // Where nobody can write its cookie jar (the scratch directory is root's own).
        let jar = FileManager.default.temporaryDirectory.appendingPathComponent("parley-nobody-\(UUID().uuidString).jar").path
        defer { try? FileManager.default.removeItem(atPath: jar) }
        /// curl as the user `nobody` (not in the socket's group): status code only.
        func asNobody(_ arguments: [String]) async throws -> (status: Int32, stdout: String, stderr: String) {
            try await ChildProcess.run("/usr/sbin/runuser", ["-u", "nobody", "--", "/usr/bin/curl", "-s"] + arguments)
        }
        #expect(try await asNobody(["-o", "/dev/null", "-w", "%{http_code}", web + "api/sessions"]).stdout == "200")
        #expect(try await asNobody(["-o", "/dev/null", "-c", jar, web]).status == 0)
        let kept = try String(contentsOfFile: jar, encoding: .utf8)
        #expect(kept.contains("Netscape") && !kept.contains("parley_web"), "opening the page gave a cookie: \(kept)")
        for (method, path) in [("DELETE", "api/sessions/1"), ("POST", "api/drawers/app/items/x/invoke"), ("POST", "api/sessions/1/replay")] {
            let refused = try await asNobody(["-X", method, "-b", jar, "-H", "Content-Type: application/json", "-d", "{}", web + path])
            #expect(refused.stdout.contains(#""status":403"#) && refused.stdout.contains("Read-only"), "\(method) \(path): \(refused)")
            // Where the link comes from, in parleyd's words: the web module names no command of its own.
            #expect(refused.stdout.contains("opened from the URL that parleyctl web prints"), "\(method) \(path): \(refused)")
        }
        // The sign-in link comes only over the control socket, which nobody cannot use.
        let parleyctl = PeerProcess.productsDirectory.appendingPathComponent("parleyctl").path
        let noLink = try await ChildProcess.run("/usr/sbin/runuser", ["-u", "nobody", "--", parleyctl, "web", "--socket", daemon.controlSocket])
        #expect(noLink.status != 0 && !noLink.stdout.contains("token="), "\(noLink)")

        // parleyd's own user: the link signs the browser (here curl) in, and the same change gets past the access check.
        let link = try await daemon.ctl(["web"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(link.hasPrefix(web + "?token="), "\(link)")
        let ownJar = daemon.directory.file("owner.jar")
        _ = try await ChildProcess.run("/usr/bin/curl", ["-s", "-o", "/dev/null", "-c", ownJar, link])
        let allowed = try await ChildProcess.run("/usr/bin/curl", ["-s", "-X", "DELETE", "-b", ownJar, web + "api/sessions/1"])
        #expect(allowed.stdout.contains(#""status":404"#), "\(allowed)")  // no session 1: but no longer 403
        #expect(try await daemon.stop() == 0)
    }

    @Test("a second parleyd on a taken Parley port or web port says one thing: which address, and what to set")
    func takenPortsSayOneThing() async throws {
        let daemon = try await ParleydProcess.start(staticPeer: nil, arguments: ["--web-listen", "127.0.0.1:0"])
        let webPort = try #require(daemon.webURL.flatMap { URLComponents(string: $0)?.port })
        for (arguments, expected) in [
            (["--port", String(daemon.port), "--web-listen", "127.0.0.1:0"],
             "cannot listen on [::]:\(daemon.port): the address is already in use"),
            (["--web-listen", "127.0.0.1:\(webPort)"],
             "the web debugger cannot listen on 127.0.0.1:\(webPort): the address is already in use by another program; set webListen"),
        ] {
            let directory = try ScratchDirectory(prefix: "parleyd-second")
            let second = try ParleydProcess(
                arguments: ["--no-discovery", "--port", "0", "--name", "second", "--control-socket", directory.file("s.sock"),
                            "--data-directory", directory.path] + arguments,
                environment: [:], directory: directory)
            #expect(await second.waitForExit(timeout: .seconds(20)) == 1)
            let problems = second.log.split(separator: "\n").filter { $0.contains(" error ") || $0.contains(" critical ") }
            #expect(problems.count == 1 && problems.first?.contains(expected) == true, "\(second.log)")
            for noise in ["Server started", "CancellationError", "Already closed", "bind(descriptor"] {
                #expect(!second.log.contains(noise), "\(second.log)")
            }
        }
        #expect(try await daemon.stop() == 0)
    }

    @Test("through parleyd, --reply-timeout is when parleyctl gives up: parleyd drops the forwarded request as it leaves, and keeps serving")
    func replyTimeoutThroughDaemon() async throws {
        let peer = try ChildProcess("parley-test-peer", ["serve"])
        let port = try await peer.waitFor { number(after: "READY port=", in: $0) }
        let daemon = try await ParleydProcess.start(staticPeer: port)
        #expect(await eventually { ((try? await daemon.ctl(["peers", "--json"]).stdout) ?? "").contains("SlowRequest") })

        let started = ContinuousClock.now
        let slow = try await daemon.ctl(["send", "SlowRequest", #"{"milliseconds":5000}"#, "--reply", "--reply-timeout", "0.5"])
        let took = ContinuousClock.now - started
        #expect(slow.status == 4, "\(slow)")
        #expect(slow.stderr.contains("within 0.5 s"), "\(slow.stderr)")
        // Not a timing test: parleyctl used to wait for parleyd's goodbye, which came only when the forwarded
        // request ended or the 2 s shutdown flush ran out; the peer answers after 5 s.
        #expect(took < .milliseconds(1_800), "parleyctl took \(took) to give up")

        let quick = try await daemon.ctl(["send", "SlowRequest", #"{"milliseconds":0}"#, "--reply"])
        #expect(quick.status == 0, "\(quick)")
        #expect(try await daemon.stop() == 0)
        #expect(try await peer.stop(SIGKILL) == 128 + SIGKILL)
    }

    @Test("an error about the message names its type as written, never parleyd's route (@<peer id>/<Type>)")
    func errorsNameTheType() async throws {
        let listr = try await ParleyCtlTests.Listr(name: "listr")
        let daemon = try await ParleydProcess.start(staticPeer: listr.port)
        #expect(await eventually { ((try? await daemon.ctl(["peers", "--json"]).stdout) ?? "").contains("AddItemCommand") })
        // A JSON string one byte over the frame limit, on standard input.
        let parleyctl = PeerProcess.productsDirectory.appendingPathComponent("parleyctl").path
        let tooLarge = try await ChildProcess.run(
            "/bin/sh",
            ["-c", #"{ printf '"'; head -c 67108864 /dev/zero | tr '\0' a; printf '"'; } | "$0" send AddItemCommand - --socket "$1""#,
             parleyctl, daemon.controlSocket])
        #expect(tooLarge.status != 0, "\(tooLarge)")
        #expect(tooLarge.stderr.contains("AddItemCommand"), "\(tooLarge.stderr)")
        #expect(!tooLarge.stderr.contains("@"), "\(tooLarge.stderr)")
        #expect(try await daemon.stop() == 0)
    }

    @Test("when two peers accept the type and none is named, send names both and asks for --to (exit 2); --to picks one")
    func ambiguousTarget() async throws {
        let first = try await ParleyCtlTests.Listr(name: "listr")
        let second = try await ParleyCtlTests.Listr(name: "listr-2")
        let daemon = try await ParleydProcess.start(staticPeer: first.port, arguments: ["--static-peer", "127.0.0.1:\(second.port)"])
        #expect(await eventually {
            let listed = (try? await daemon.ctl(["peers", "--json"]).stdout) ?? ""
            return listed.contains("\"listr\"") && listed.contains("\"listr-2\"")
        })
        // parleyd pages its peer list, so that a large LAN's list is never one huge reply: here one peer a page,
        // ordered by id, the last page without a next.
        let pager = localTransceiver("pager")
        try await pager.start()
        let control = try await pager.connect(toUnixSocket: daemon.controlSocket)
        let page1 = try await pager.request(Control.Peers(limit: 1), from: control, expecting: Control.PeerList.self)
        let page2 = try await pager.request(Control.Peers(after: page1.nextAfter, limit: 1), from: control, expecting: Control.PeerList.self)
        #expect(page1.peers.count == 1 && page1.nextAfter == page1.peers.first?.id, "\(page1)")
        #expect(page2.peers.count == 1 && page2.nextAfter == nil, "\(page2)")
        #expect(Set((page1.peers + page2.peers).map(\.name)) == ["listr", "listr-2"])
        #expect((page1.peers.first?.id ?? "") < (page2.peers.first?.id ?? ""))
        await pager.stop()

        // The shell completes peer names (and id prefixes) from the running parleyd.
        let completion = try await ChildProcess.run(
            "parleyctl", ["---completion", "peers", "--", "--wait-for", "5", "0", "parleyctl", "peers", "--socket", daemon.controlSocket, "--wait-for", ""])
        let offered = Set(completion.stdout.split(separator: "\n").map(String.init))
        #expect(offered.isSuperset(of: ["listr", "listr-2"]), "\(completion)")

        let ambiguous = try await daemon.ctl(["send", "ListItemsCommand", "--reply"])
        #expect(ambiguous.status == 2, "\(ambiguous)")
        #expect(ambiguous.stderr.contains("2 peers accept ListItemsCommand") && ambiguous.stderr.contains("listr-2 ("), "\(ambiguous.stderr)")
        #expect(ambiguous.stderr.contains("--to NAME|ID"), "\(ambiguous.stderr)")
        let chosen = try await daemon.ctl(["send", "ListItemsCommand", "--reply", "--to", "listr-2", "--json"])
        #expect(chosen.status == 0, "\(chosen)")
        let direct = try await ChildProcess.run(
            "parleyctl", ["send", "ListItemsCommand", "--reply", "--direct", "--no-discovery"] + ["--peer", "127.0.0.1:\(first.port)", "--peer", "127.0.0.1:\(second.port)"]
        )
        // With --peer the user chose the endpoints: no type check, so no ambiguity either (the first to answer).
        #expect(direct.status == 0, "\(direct)")
        #expect(try await daemon.stop() == 0)
        try await first.stop()
        try await second.stop()
    }

    @Test("to a LAN peer parleyd's control types do not exist, and a type nobody takes is unknown (code 5, not 7 or 8)")
    func lanPeerSeesProtocolCodes() async throws {
        let daemon = try await ParleydProcess.start(staticPeer: nil)
        let peer = localTransceiver("lan-peer")
        try await peer.start()
        let parleyd = try await peer.connect(to: Endpoint(host: "127.0.0.1", port: daemon.port))
        #expect(!parleyd.accepts.contains { $0.hasPrefix("parley.control.") || $0.hasPrefix("parley.debugger.S") }, "\(parleyd.accepts)")
        #expect(parleyd.accepts.contains("parley.debugger.record"), "apps may still send their states")
        for typeName in ["parley.control.Status", "test.Nobody"] {
            let refused = await #expect(throws: TransceiverError.self) {
                try await peer.requestRaw(typeName: typeName, payload: ByteBuffer(string: "{}"), from: parleyd.id, timeout: .seconds(10))
            }
            guard case .remoteError(let code, _)? = refused else {
                Issue.record("\(typeName): \(String(describing: refused))")
                continue
            }
            #expect(code == .unknownType, "\(typeName): \(code)")
        }
        await peer.stop()
        #expect(try await daemon.stop() == 0)
    }

    @Test("send without --to waits for a peer that accepts the type, not another parleyd that connected first")
    func defaultPeerAcceptsType() async throws {
        let other = try await ParleydProcess.start(staticPeer: nil)
        let listrPort = try unusedPort()
        let daemon = try await ParleydProcess.start(staticPeer: other.port, arguments: ["--static-peer", "127.0.0.1:\(listrPort)"])
        // Only the other parleyd is connected: it accepts parley.control.* and the debugger's types, not listr's.
        #expect(await eventually { (try? await daemon.ctl(["peers", "--json"]).stdout.contains("\"testd\"")) == true })
        async let sent = daemon.ctl(["send", "AddItemCommand", #"{"title":"milk"}"#, "--reply", "--json", "--wait-peer", "30"])
        let listr = try await ParleyCtlTests.Listr(port: listrPort)
        let result = try await sent
        #expect(result.status == 0, "\(result)")
        let line = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        #expect((line?["from"] as? [String: Any])?["name"] as? String == "listr", "\(result.stdout)")
        try await listr.stop()
        #expect(try await daemon.stop() == 0)
        #expect(try await other.stop() == 0)
    }

    @Test("send --reply, peers, status and reload go through parleyd to the example app")
    func throughDaemon() async throws {
        let listr = try await ParleyCtlTests.Listr()
        let daemon = try await ParleydProcess.start(staticPeer: listr.port)

        // --wait-peer covers the moment parleyd needs to connect to its static peer.
        let added = try await daemon.ctl(["send", "AddItemCommand", #"{"title":"milk"}"#, "--reply", "--wait-peer", "10"])
        #expect(added.status == 0, "\(added)")
        #expect(added.stdout == "added \"milk\" (1 item on the list)\n")

        let listed = try await daemon.ctl(["send", "ListItemsCommand", "--reply", "--json", "--to", "listr"])
        #expect(listed.status == 0, "\(listed)")
        let line = try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [String: Any]
        #expect((line?["payload"] as? [String: Any])?["message"] as? String == "[ ] milk")
        #expect((line?["from"] as? [String: Any])?["name"] as? String == "listr")

        let refused = try await daemon.ctl(["send", "AddItemCommand", #"{"title":" "}"#, "--reply"])
        #expect(refused.status == 1 && refused.stderr.contains("the title is empty"), "\(refused)")

        let peers = try await daemon.ctl(["peers", "--json"])
        #expect(peers.status == 0, "\(peers)")
        let peer = try JSONSerialization.jsonObject(with: Data(peers.stdout.utf8)) as? [String: Any]
        #expect(peer?["name"] as? String == "listr")
        #expect(peer?["address"] as? String == "127.0.0.1:\(listr.port)")
        #expect((peer?["messagesOut"] as? Int ?? 0) >= 3, "\(peers.stdout)")
        let accepts = peer?["accepts"] as? [String] ?? []
        #expect(accepts.contains("AddItemCommand"), "\(peers.stdout)")

        let status = try await daemon.ctl(["status"])
        #expect(status.status == 0, "\(status)")
        #expect(status.stdout.contains("name:          testd") && status.stdout.contains("peers:         1"), "\(status.stdout)")
        #expect(status.stdout.contains("port:          \(daemon.port)"), "\(status.stdout)")
        let statusJSON = try await daemon.ctl(["status", "--json"])
        let object = try JSONSerialization.jsonObject(with: Data(statusJSON.stdout.utf8)) as? [String: Any]
        #expect(object?["peerCount"] as? Int == 1 && object?["discovery"] as? String == "off", "\(statusJSON)")

        let reload = try await daemon.ctl(["reload"])
        #expect(reload.status == 0 && reload.stdout.contains("nothing changed"), "\(reload)")
        _ = try await daemon.child.waitFor(in: \.stderr) { $0.contains("configuration reloaded") ? true : nil }

        let nobody = try await daemon.ctl(["send", "AddItemCommand", "{}", "--wait-peer", "1", "--to", "nobody"])
        #expect(nobody.status == 3, "\(nobody)")
        #expect(nobody.stderr.contains("no Parley peer named \"nobody\""), "\(nobody.stderr)")

        #expect(try await daemon.stop() == 0)
        try await listr.stop()
    }

    @Test("a local client's request for a peer parleyd does not have gets an error reply: no connected peer matches")
    func noMatchingPeer() async throws {
        let daemon = try await ParleydProcess.start(staticPeer: nil)
        let (client, parleyd) = try await daemon.localClient()
        #expect(parleyd.name == "testd")
        await #expect {
            _ = try await client.requestRaw(typeName: "@nobody/test.X", payload: ByteBuffer(string: "{}"), from: parleyd.id, timeout: .seconds(5))
        } throws: { error in
            "\(error)".contains("no connected peer matches \"nobody\"")
        }
        // Without the prefix, a local client's message is refused too (parleyd routes only @target/Type).
        await #expect(throws: TransceiverError.self) {
            _ = try await client.requestRaw(typeName: "test.X", payload: ByteBuffer(string: "{}"), from: parleyd.id, timeout: .seconds(5))
        }
        await client.stop()
        #expect(try await daemon.stop() == 0)
    }

    /// parleyd remembers where a local client's `@target/Type` went while its peers stay the same; the peers
    /// changing must be seen at once, not the peer that used to have the name.
    @Test("a routed type follows the peers: @name reaches the new peer of that name after the old one left")
    func routeFollowsPeers() async throws {
        let daemon = try await ParleydProcess.start(staticPeer: nil)
        let (client, parleyd) = try await daemon.localClient()
        func echo(_ marker: String) -> Transceiver {
            let peer = localTransceiver("echo")
            peer.respondRaw(to: "test.Who") { _, _ in ("test.Who", ByteBuffer(string: marker)) }
            return peer
        }
        @Sendable func ask() async throws -> String {
            let reply = try await client.requestRaw(typeName: "@echo/test.Who", payload: ByteBuffer(string: "{}"), from: parleyd.id, timeout: .seconds(5))
            return String(buffer: reply.payload)
        }

        let first = echo("first")
        try await first.start()
        try await first.connect(to: Endpoint(host: "127.0.0.1", port: daemon.port))
        #expect(try await ask() == "first")
        #expect(try await ask() == "first")  // the second time from what parleyd remembered
        await first.stop()
        // Once parleyd has seen it go, the name matches nobody.
        #expect(await eventually { do { _ = try await ask(); return false } catch { return "\(error)".contains("no connected peer matches") } })

        let second = echo("second")
        try await second.start()
        // Registered by parleyd before `connect` returns here: the very next message must find it.
        try await second.connect(to: Endpoint(host: "127.0.0.1", port: daemon.port))
        #expect(try await ask() == "second")
        await second.stop()
        await client.stop()
        #expect(try await daemon.stop() == 0)
    }

    @Test("listen through parleyd prints a message a LAN peer sends to parleyd; SIGINT exits 0")
    func listenThroughDaemon() async throws {
        let daemon = try await ParleydProcess.start(staticPeer: nil)
        let listener = try ChildProcess("parleyctl", ["listen", "--json", "--type", "test.Note", "--socket", daemon.controlSocket])
        _ = try await listener.waitFor(in: \.stderr) { $0.contains("listening for test.Note through parleyd") ? true : nil }
        let other = try ChildProcess("parleyctl", ["listen", "--type", "test.Other", "--socket", daemon.controlSocket])
        _ = try await other.waitFor(in: \.stderr) { $0.contains("listening for test.Other") ? true : nil }

        let sender = try await ChildProcess.run(
            "parleyctl",
            ["send", "test.Note", #"{"text": "hi", "n": 1}"#, "--direct", "--name", "lanpeer", "--peer", "127.0.0.1:\(daemon.port)", "--wait-peer", "10"]
        )
        #expect(sender.status == 0, "\(sender)")
        let line = try await listener.waitFor(timeout: .seconds(10)) { $0.split(separator: "\n").first.map(String.init) }
        let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        #expect(object?["type"] as? String == "test.Note")
        #expect(((object?["from"] as? [String: Any])?["id"] as? String)?.count == 36, "\(line)")
        // The payload arrives byte for byte (parleyd never decodes it).
        #expect(line.contains(#""payload":{"text": "hi", "n": 1}"#), "\(line)")
        #expect(try await listener.stop(SIGINT) == 0)
        #expect(try await other.stop(SIGINT) == 0)
        #expect(other.stdout.isEmpty, "a subscriber of another type got: \(other.stdout)")
        #expect(try await daemon.stop() == 0)
    }

    @Test("parleyctl calls leave nothing above debug level in parleyd's log: a local tool's comings and goings are not news")
    func perCallLinesAreDebug() async throws {
        let daemon = try await ParleydProcess.start(staticPeer: nil, arguments: ["--log-level", "debug"])
        let calls = [["peers"], ["status"], ["sessions"]]
        for call in calls {
            let result = try await daemon.ctl(call)
            #expect(result.status == 0, "\(call): \(result)")
        }
        // parleyd logs a connection's close last, once it has seen it: when every call's is there, all their lines are.
        @Sendable func afterReady(_ text: String) -> [Substring] {
            // Whole lines only: the last may still be on its way.
            let lines = text.split(separator: "\n").dropLast(text.hasSuffix("\n") ? 0 : 1)
            return Array(lines.drop { !$0.contains("parleyd ready") }.dropFirst())
        }
        let count = calls.count
        let lines = try await daemon.child.waitFor(in: \.stderr) { text -> [Substring]? in
            let lines = afterReady(text)
            let closed = lines.filter { $0.contains(" debug ") && $0.contains("peer connection closed") && $0.contains("peer-name=parleyctl") }
            return closed.count >= count ? lines : nil
        }
        // The human format: `<time> <level> <label>: <message> <metadata>`.
        let loud = lines.filter { line in
            let level = line.split(separator: " ").dropFirst().first.map(String.init) ?? ""
            return !["trace", "debug"].contains(level)
        }
        #expect(loud.isEmpty, "lines above debug level for parleyctl calls:\n\(loud.joined(separator: "\n"))")
        #expect(lines.contains { $0.contains(" debug ") && $0.contains("peer connected") && $0.contains("peer-name=parleyctl") }, "\(lines)")
        #expect(try await daemon.stop() == 0)
    }

    @Test("without --direct and no parleyd at --socket, every daemon-backed command exits 5 saying where and how to start it")
    func daemonNotReachable() async throws {
        let missing = "/tmp/parleyctl-no-such-\(UUID().uuidString.prefix(8)).sock"
        for arguments in [["send", "AddItemCommand", "{}"], ["listen", "--type", "X"], ["peers"], ["status"], ["reload"]] {
            let result = try await ChildProcess.run("parleyctl", arguments + ["--socket", missing])
            #expect(result.status == 5, "\(arguments): \(result)")
            #expect(result.stderr.contains("parleyd is not reachable at \(missing)"), "\(arguments): \(result.stderr)")
            #expect(result.stderr.contains("Start it"), "\(arguments): \(result.stderr)")
            // --direct is suggested only by the commands that have it.
            let hasDirect = ["send", "listen", "peers"].contains(arguments[0])
            #expect(result.stderr.contains("--direct") == hasDirect, "\(arguments): \(result.stderr)")
        }
    }

    @Test("a misspelt command is named, with the closest commands, instead of the option after it")
    func misspeltCommand() async throws {
        let result = try await ChildProcess.run("parleyctl", ["sesions", "--socket", "/tmp/none.sock"])
        #expect(result.status == 2, "\(result)")
        #expect(result.stderr == "parleyctl: error: unknown command 'sesions' (did you mean sessions?); parleyctl --help lists the commands\n", "\(result)")
        let far = try await ChildProcess.run("parleyctl", ["zzz"])
        #expect(far.status == 2 && far.stderr.contains("unknown command 'zzz'; parleyctl --help lists the commands"), "\(far)")
    }
}
