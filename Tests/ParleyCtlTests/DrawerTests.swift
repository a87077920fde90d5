import Foundation
import NIOCore
import Parley
import ParleyDrawer
@testable import ParleyRemoteDrawer
import ParleyTestSupport
import Synchronization
import Testing

/// The debug drawer end to end: an app using the Swift API (`DebugDrawer`) connected to a real parleyd, driven by
/// parleyctl. What parleyd has heard is observed through the web debugger's live stream (curl), the way an open
/// page hears it, so the test waits for events rather than polling.
@Suite("Debug drawer", .serialized, .timeLimit(.minutes(2)))
struct DrawerTests {
    /// The drawer events for the app called `app` in the text of the live stream (curl), in order.
    static func drawerEvents(in text: String, app: String) -> [AppDrawer] {
        var events: [AppDrawer] = []
        var event = ""
        for line in text.split(separator: "\n") {
            if line.hasPrefix("event: ") {
                event = String(line.dropFirst(7))
            } else if line.hasPrefix("data: "), event == "drawer",
                let drawer = try? JSONDecoder().decode(AppDrawer.self, from: Data(line.dropFirst(6).utf8)), drawer.peer.name == app
            {
                events.append(drawer)
            }
        }
        return events
    }

    /// An app named `name` with a drawer, not listening (it dials parleyd).
    static func app(_ name: String) -> Transceiver {
        Transceiver(configuration: TransceiverConfiguration(name: name, identity: .ephemeral, listenHost: nil, port: 0))
    }

    @Test("with a shared secret: parleyd, which proved it, sets the app's drawer; a peer without the secret never reaches the drawer")
    func drawerWithSecret() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("drawer-secret-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let secret = SharedSecret.generate()
        let secretFile = directory.appendingPathComponent("secret").path
        try secret.write(toFile: secretFile, replacing: false)
        let daemon = try await ParleydProcess.start(staticPeer: nil, arguments: ["--secret-file", secretFile])
        let events = try ChildProcess("/usr/bin/curl", ["-sN", try #require(daemon.webURL) + "api/events"])
        _ = try await events.waitFor { $0.contains(": parley live events") ? true : nil }

        // The app listens too, so that a stranger can try it directly.
        let app = Transceiver(configuration: TransceiverConfiguration(
            name: "secret-app", identity: .ephemeral, listenHost: "127.0.0.1", port: 0, sharedSecret: secret))
        let drawer = DebugDrawer(transceiver: app)
        let slow = drawer.toggle("network.slow", "Simulate a slow network", default: false)
        try await withRunning([app]) {
            _ = try await app.connect(to: Endpoint(host: "127.0.0.1", port: daemon.port))
            _ = try await events.waitFor { $0.contains("event: drawer") && $0.contains("secret-app") ? true : nil }
            let set = try await daemon.ctl(["set", "secret-app", "network.slow", "true"])
            #expect(set.status == 0 && set.stdout == "network.slow = true\n", "\(set)")
            #expect(slow.value == true)

            let stranger = Transceiver(configuration: TransceiverConfiguration(name: "stranger", identity: .ephemeral, listenHost: nil))
            _ = try await withRunning([stranger]) {
                await #expect(throws: TransceiverError.self) {
                    try await stranger.connect(to: Endpoint(host: "127.0.0.1", port: app.listeningPort!))
                }
            }
            #expect(slow.value == true, "the stranger changed the drawer")
            #expect(app.peers.allSatisfy { $0.name != "stranger" })
        }
        _ = try await events.stop(SIGTERM)
        #expect(try await daemon.stop() == 0)
    }

    @Test("set and invoke reach the app's typed settings and actions; invalid values are refused and change nothing; the app's own changes reach parleyd; remembered values come back on the next connection")
    func swiftAppEndToEnd() async throws {
        let daemon = try await ParleydProcess.start(staticPeer: nil)
        let events = try ChildProcess("/usr/bin/curl", ["-sN", try #require(daemon.webURL) + "api/events"])
        _ = try await events.waitFor { $0.contains(": parley live events") ? true : nil }

        let app = Self.app("drawer-app")
        let drawer = DebugDrawer(transceiver: app)
        let slow = drawer.toggle("network.slow", "Simulate a slow network", default: false, remember: true)
        let theme = drawer.choice("theme", "Theme", default: Theme.light)
        let latency = drawer.number("latency", "Latency (ms)", default: 0, range: 0...5000, step: 100)
        let greeting = drawer.text("greeting", "Greeting", default: "Hello", maxLength: 8)
        let speed = drawer.choice("speed", "Speed", default: Speed.slow)
        let mood = drawer.choice("mood", "Mood", default: Mood.calm)
        drawer.action("reset", "Reset") { "3 items removed" }
        drawer.info("build", "Build", value: "1.0 (test)")
        try await withRunning([app]) {
            _ = try await app.connect(to: Endpoint(host: "127.0.0.1", port: daemon.port))
            _ = try await events.waitFor { $0.contains("event: drawer") && $0.contains("drawer-app") ? true : nil }

            let listed = try await daemon.ctl(["drawer", "drawer-app", "--json"])
            #expect(listed.status == 0, "\(listed)")
            for id in ["network.slow", "theme", "latency", "greeting", "speed", "mood", "reset", "build"] {
                #expect(listed.stdout.contains(#""id":"\#(id)""#), "\(id)")
            }

            var slowValues = slow.values.makeAsyncIterator()
            #expect(await slowValues.next() == false)
            let set = try await daemon.ctl(["set", "drawer-app", "network.slow", "true"])
            #expect(set.status == 0 && set.stdout == "network.slow = true\n", "\(set)")
            #expect(await slowValues.next() == true)
            #expect(try await daemon.ctl(["set", "drawer-app", "theme", "dark"]).stdout == "theme = dark\n")
            #expect(theme.value == .dark)

            // A text: set from parleyctl, seen by the app (as text, even when it looks like JSON), up to its limit.
            var greetings = greeting.values.makeAsyncIterator()
            #expect(await greetings.next() == "Hello")
            #expect(try await daemon.ctl(["set", "drawer-app", "greeting", "Hi there"]).stdout == "greeting = Hi there\n")
            #expect(await greetings.next() == "Hi there")
            #expect(try await daemon.ctl(["set", "drawer-app", "greeting", "42"]).status == 0)
            #expect(await greetings.next() == "42")
            #expect(greeting.value == "42")

            // Choices of enums without String raw values, by the cases' names.
            #expect(try await daemon.ctl(["set", "drawer-app", "speed", "fast"]).stdout == "speed = fast\n")
            #expect(speed.value == .fast)
            #expect(try await daemon.ctl(["set", "drawer-app", "mood", "busy"]).stdout == "mood = busy\n")
            #expect(mood.value == .busy)

            // Refused before the app sees anything.
            for (item, value, reason) in [
                ("latency", "150", "steps of 100"), ("latency", "6000", "outside the range"), ("latency", "\"fast\"", "takes a number"),
                ("theme", "blue", "no option \"blue\""), ("nothing", "1", "no item \"nothing\""), ("reset", "true", "is an action"),
                ("build", "\"2.0\"", "read-only"),
                ("greeting", "Too long!", "9 characters (code points), above its limit of 8"), ("greeting", "ééééééééé", "above its limit of 8"),
                ("speed", "2", "no option \"2\"; its options: slow, fast"), ("mood", "{}", "no option"),
            ] {
                let refused = try await daemon.ctl(["set", "drawer-app", item, value])
                #expect(refused.status == 1 && refused.stderr.contains(reason), "\(item) \(value): \(refused)")
            }
            let nobody = try await daemon.ctl(["set", "nobody", "theme", "dark"])
            #expect(nobody.status == 1 && nobody.stderr.contains("no connected app with a drawer matches \"nobody\""), "\(nobody)")
            #expect(latency.value == 0 && theme.value == .dark && greeting.value == "42" && speed.value == .fast && mood.value == .busy)
            let unchanged = try await daemon.ctl(["drawer", "drawer-app", "--json"])
            #expect(unchanged.stdout.contains(#""value":"42""#) && unchanged.stdout.contains(#""value":"fast""#), "\(unchanged)")

            let invoked = try await daemon.ctl(["invoke", "drawer-app", "reset"])
            #expect(invoked.status == 0 && invoked.stdout == "3 items removed\n", "\(invoked)")

            // The app changes a value itself: parleyd's drawer follows.
            theme.set(.light)
            _ = try await events.waitFor { text in
                text.split(separator: "\n").last { $0.hasPrefix("data: ") && $0.contains("drawer-app") }?.contains(#""value":"light""#) == true ? true : nil
            }
            #expect(try await daemon.ctl(["drawer", "drawer-app", "--json"]).stdout.contains(#""value":"light""#))
        }

        // The next connection of an app of the same name gets the remembered value before it declares.
        let again = Self.app("drawer-app")
        let drawerAgain = DebugDrawer(transceiver: again)
        let slowAgain = drawerAgain.toggle("network.slow", "Simulate a slow network", default: false, remember: true)
        let themeAgain = drawerAgain.choice("theme", "Theme", default: Theme.light)
        var values = slowAgain.values.makeAsyncIterator()
        #expect(await values.next() == false)
        try await withRunning([again]) {
            _ = try await again.connect(to: Endpoint(host: "127.0.0.1", port: daemon.port))
            #expect(await values.next() == true)
            // theme was not declared with remember: it keeps its default.
            #expect(themeAgain.value == .light)
        }
        _ = try await events.stop()
        #expect(try await daemon.stop() == 0)
    }

    @Test("the app's own quick changes, values and added items, reach parleyd in the order they were made: it ends with the last")
    func quickChangesInOrder() async throws {
        let daemon = try await ParleydProcess.start(staticPeer: nil)
        let events = try ChildProcess("/usr/bin/curl", ["-sN", try #require(daemon.webURL) + "api/events"])
        _ = try await events.waitFor { $0.contains(": parley live events") ? true : nil }

        let app = Self.app("quick-app")
        let drawer = DebugDrawer(transceiver: app)
        let counter = drawer.number("counter", "Counter", default: 0)
        let changes = 300, every = 30
        try await withRunning([app]) {
            _ = try await app.connect(to: Endpoint(host: "127.0.0.1", port: daemon.port))
            _ = try await events.waitFor { Self.drawerEvents(in: $0, app: "quick-app").isEmpty ? nil : true }
            let before = Self.drawerEvents(in: events.stdout, app: "quick-app").count

            // As fast as the app can: each value a Changed, each added item a Declare (with the value of then).
            for n in 1...changes {
                counter.set(Double(n))
                if n % every == 0 { drawer.info("mark.\(n)", "Mark \(n)", value: "\(n)") }
            }
            // parleyd tells the open pages of each message it takes, in the order it takes them: wait for all.
            let expected = before + changes + changes / every
            let seen = try await events.waitFor { text in
                // Counting the app's name is cheap; decoding every event on every read is not.
                text.components(separatedBy: #""name":"quick-app""#).count - 1 >= expected
                    ? Array(Self.drawerEvents(in: text, app: "quick-app").dropFirst(before)) : nil
            }
            let counters = seen.map { drawer -> Double in
                if case .number(let n) = drawer.items.first(where: { $0.id == "counter" })?.value { n } else { -1 }
            }
            let sizes = seen.map(\.items.count)
            /// Where parleyd heard something older after something newer: (what came first, what came next).
            func backwards<T: Comparable>(_ list: [T]) -> [(T, T)] { zip(list, list.dropFirst()).filter { $0.1 < $0.0 } }
            #expect(seen.count == changes + changes / every)
            #expect(backwards(counters).isEmpty, "values out of order: \(backwards(counters))")
            #expect(backwards(sizes).isEmpty, "declarations out of order (item counts): \(backwards(sizes))")
            #expect(counters.last == Double(changes) && sizes.last == 1 + changes / every)

            let listed = try await daemon.ctl(["drawer", "quick-app", "--json"])
            let final = try JSONDecoder().decode(AppDrawer.self, from: Data(listed.stdout.utf8))
            #expect(final.items.first { $0.id == "counter" }?.value == .number(Double(changes)), "\(listed)")
            #expect(final.items.count == 1 + changes / every)
        }
        _ = try await events.stop()
        #expect(try await daemon.stop() == 0)
    }

    @Test("labels and values holding terminal escapes (CSI, OSC 52, U+2028) are shown escaped by parleyctl drawer, and exact with --json")
    func escapesInTheDrawer() async throws {
        let daemon = try await ParleydProcess.start(staticPeer: nil)
        let events = try ChildProcess("/usr/bin/curl", ["-sN", try #require(daemon.webURL) + "api/events"])
        _ = try await events.waitFor { $0.contains(": parley live events") ? true : nil }

        let red = "\u{1b}[31mred\u{1b}[0m"
        let clipboard = "\u{1b}]52;c;cm0gLXJmIH4K\u{07}"
        let separated = "one\u{2028}two"
        let app = Self.app("escape-app")
        let drawer = DebugDrawer(transceiver: app)
        _ = drawer.toggle("paint", "Paint \(red)", default: false)
        drawer.info("clip", "Clip \(clipboard)", value: clipboard)
        _ = drawer.text("note", "Note", default: separated)
        struct Refusal: Error, CustomStringConvertible {
            var description: String { "no\nparleyctl: error: a line the app made up" }
        }
        drawer.action("forge", "Forge") { "done\nparleyctl: a line the app made up" }
        drawer.action("refuse", "Refuse") { throw Refusal() }
        try await withRunning([app]) {
            _ = try await app.connect(to: Endpoint(host: "127.0.0.1", port: daemon.port))
            _ = try await events.waitFor { Self.drawerEvents(in: $0, app: "escape-app").isEmpty ? nil : true }

            let text = try await daemon.ctl(["drawer", "escape-app"])
            #expect(text.status == 0, "\(text)")
            #expect(!text.stdout.unicodeScalars.contains { $0 == "\u{1b}" || $0 == "\u{07}" || $0 == "\u{2028}" }, "\(text.stdout)")
            let lines = text.stdout.split(separator: "\n")
            #expect(lines.contains { $0.hasPrefix("paint ") && $0.hasSuffix(#"Paint \x1b[31mred\x1b[0m"#) }, "\(text.stdout)")
            #expect(lines.contains { $0.hasPrefix("clip ") && $0.components(separatedBy: #"\x1b]52;c;cm0gLXJmIH4K\x07"#).count == 3 && $0.hasSuffix(#"Clip \x1b]52;c;cm0gLXJmIH4K\x07"#) },
                "\(text.stdout)")
            #expect(lines.contains { $0.hasPrefix("note ") && $0.contains(#"one\u2028two"#) }, "\(text.stdout)")

            // What the app answers to set and invoke, its refusals too, stays on parleyctl's one line.
            for (arguments, expected) in [
                (["set", "escape-app", "note", #""a\nparleyctl: a line the app made up""#], #"note = a\nparleyctl: a line the app made up"#),
                (["invoke", "escape-app", "forge"], #"done\nparleyctl: a line the app made up"#),
                (["invoke", "escape-app", "refuse"], #"no\nparleyctl: error: a line the app made up"#),
            ] {
                let answer = try await daemon.ctl(arguments)
                let output = answer.stdout + answer.stderr
                #expect(output.contains(expected), "\(arguments): \(answer)")
                #expect(!output.split(separator: "\n").contains { $0.hasPrefix("parleyctl: a line") || $0.hasPrefix("parleyctl: error: a line") },
                    "\(arguments): \(answer)")
            }

            let json = try await daemon.ctl(["drawer", "escape-app", "--json"])
            #expect(!json.stdout.unicodeScalars.contains { $0 == "\u{1b}" || $0 == "\u{07}" || $0 == "\u{2028}" }, "\(json.stdout)")
            let items = try JSONDecoder().decode(AppDrawer.self, from: Data(json.stdout.utf8)).items
            #expect(items.map(\.label) == ["Paint \(red)", "Clip \(clipboard)", "Note", "Forge", "Refuse"])
            #expect(items.map(\.value) == [.bool(false), .string(clipboard), .string("a\nparleyctl: a line the app made up"), nil, nil])
        }
        _ = try await events.stop()
        #expect(try await daemon.stop() == 0)
    }

    @Test("many apps with large drawers are listed whole, in pages under parleyd's frame limit")
    func manyLargeDrawers() async throws {
        // A frame limit of 1 MiB: twelve drawers of about 120 KB each (slashes, which JSON may escape) exceed it.
        let daemon = try await ParleydProcess.start(staticPeer: nil, arguments: ["--max-frame-size", "1048576"])
        let apps = (0..<12).map { Self.app("paged-app-\($0 < 10 ? "0" : "")\($0)") }
        var drawers: [DebugDrawer] = []
        for app in apps {
            let drawer = DebugDrawer(transceiver: app)
            for item in 0..<30 { drawer.info("path-\(item)", "Path", value: String(repeating: "/", count: 4_000)) }
            drawers.append(drawer)
        }
        try await withRunning(apps) {
            for app in apps { _ = try await app.connect(to: Endpoint(host: "127.0.0.1", port: daemon.port)) }
            #expect(await eventually { ((try? await daemon.ctl(["drawer", "--json"]).stdout) ?? "").split(separator: "\n").count == 12 })
            let listed = try await daemon.ctl(["drawer", "--json"])
            #expect(listed.status == 0, "\(listed.stderr)")
            let names = try listed.stdout.split(separator: "\n").map { try JSONDecoder().decode(AppDrawer.self, from: Data($0.utf8)).peer.name }
            #expect(names == (0..<12).map { "paged-app-\($0 < 10 ? "0" : "")\($0)" })
        }
        withExtendedLifetime(drawers) {}
        #expect(try await daemon.stop() == 0)
    }

    @Test("refused drawer declarations are logged under the log's throttle: a burst, then one count of those held back")
    func refusedDeclarationsAreThrottled() async throws {
        let daemon = try await ParleydProcess.start(staticPeer: nil)
        let app = Self.app("flooding-app")
        try await withRunning([app]) {
            let parleyd = try await app.connect(to: Endpoint(host: "127.0.0.1", port: daemon.port))
            for _ in 0..<300 {
                try await app.sendRaw(typeName: DrawerMessage.Declare.messageType, payload: ByteBuffer(string: #"{"items": 5}"#), to: parleyd.id)
            }
            // The transceiver's own "message not handled" (each refused Declare is a failed handler too) is held back
            // under its own line, which may come first: the one waited for is the drawer's.
            let summary = try await daemon.waitForLine(containing: #"line="drawer declaration refused"#)
            #expect(summary.contains("log lines held back"), "\(summary)")
        }
        let refused = daemon.log.split(separator: "\n").filter { $0.contains("drawer declaration refused") && !$0.contains("held back") }
        // A burst of 100, then 10 a second: far fewer than the 300 refusals however slowly they were sent here.
        #expect(refused.count >= 100 && refused.count <= 250, "\(refused.count) lines")
        #expect(try await daemon.stop() == 0)
    }

    @Test("the Listr example's drawer: listed (its reset as destructive), a style switched changes its answers, the list emptied by an action")
    func listr() async throws {
        let listr = try await ParleyCtlTests.Listr()
        let daemon = try await ParleydProcess.start(staticPeer: listr.port)
        _ = try await daemon.ctl(["peers", "--wait-for", "listr"])
        let events = try ChildProcess("/usr/bin/curl", ["-sN", try #require(daemon.webURL) + "api/events"])
        _ = try await events.waitFor { $0.contains(": parley live events") ? true : nil }
        // The drawer is declared right after the connection; if it came before the stream opened, list it.
        if try await !daemon.ctl(["drawer", "listr"]).stdout.contains("list.style") {
            _ = try await events.waitFor { $0.contains("event: drawer") ? true : nil }
        }
        let listed = try await daemon.ctl(["drawer", "listr"])
        #expect(listed.stdout.contains("list.style") && listed.stdout.contains("checkboxes [checkboxes|bullets]"), "\(listed)")
        let reset = listed.stdout.split(separator: "\n").first { $0.hasPrefix("list.reset ") }
        #expect(reset?.contains("action") == true && reset?.contains("(action, destructive)") == true, "\(listed.stdout)")
        let table = listed.stdout.split(separator: "\n").dropFirst().joined(separator: "\n")
        #expect(columnsLineUp(table, headings: ["ITEM", "KIND", "VALUE", "LABEL"]), "\(listed.stdout)")
        #expect(try await daemon.ctl(["send", "AddItemCommand", #"{"title":"milk"}"#, "--reply"]).status == 0)
        #expect(try await daemon.ctl(["set", "listr", "list.style", "bullets"]).status == 0)
        let shown = try await daemon.ctl(["send", "ListItemsCommand", "--reply"])
        #expect(shown.stdout.contains("• milk"), "\(shown)")
        let emptied = try await daemon.ctl(["invoke", "listr", "list.reset"])
        #expect(emptied.stdout == "removed 1 item\n", "\(emptied)")
        #expect(try await daemon.ctl(["send", "ListItemsCommand", "--reply"]).stdout.contains("the list is empty"))

        // The examples in `parleyctl help set` and `help invoke` are the Listr example's own, and work as written.
        let parleyctl = PeerProcess.productsDirectory.appendingPathComponent("parleyctl").path
        for command in ["set", "invoke"] {
            let help = try await ChildProcess.run("parleyctl", ["help", command]).stdout
            let examples = help.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
                .filter { $0.hasPrefix("parleyctl \(command) ") }
            #expect(!examples.isEmpty, "\(help)")
            for example in examples {
                let line = example.replacingOccurrences(of: "parleyctl ", with: "\"$0\" ", options: .anchored)
                let run = try await ChildProcess.run("/bin/sh", ["-c", line.components(separatedBy: " #").first! + #" --socket "$1""#, parleyctl, daemon.controlSocket])
                #expect(run.status == 0, "\(example): \(run)")
            }
        }
        _ = try await events.stop()
        #expect(try await daemon.stop() == 0)
        try await listr.stop()
    }
}
