import Foundation
import Parley
import ParleyRemoteDrawer
import ParleyTestSupport
import Testing

/// The debug drawer end to end: an app using the Swift API (`DebugDrawer`) connected to a real parleyd, driven by
/// parleyctl. What parleyd has heard is observed through the web debugger's live stream (curl), the way an open
/// page hears it, so the test waits for events rather than polling.
@Suite("Debug drawer", .serialized, .timeLimit(.minutes(2)))
struct DrawerTests {
    typealias Daemon = DaemonBackedTests.Daemon

    enum Theme: String, CaseIterable, Codable, Sendable {
        case light, dark
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
        let daemon = try await Daemon(staticPeer: nil, arguments: ["--secret-file", secretFile])
        let events = try Child("/usr/bin/curl", ["-sN", daemon.webURL + "api/events"])
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
        try await daemon.stop()
    }

    @Test("set and invoke reach the app's typed settings and actions; invalid values are refused and change nothing; the app's own changes reach parleyd; remembered values come back on the next connection")
    func swiftAppEndToEnd() async throws {
        let daemon = try await Daemon(staticPeer: nil)
        let events = try Child("/usr/bin/curl", ["-sN", daemon.webURL + "api/events"])
        _ = try await events.waitFor { $0.contains(": parley live events") ? true : nil }

        let app = Self.app("drawer-app")
        let drawer = DebugDrawer(transceiver: app)
        let slow = drawer.toggle("network.slow", "Simulate a slow network", default: false, remember: true)
        let theme = drawer.choice("theme", "Theme", default: Theme.light)
        let latency = drawer.number("latency", "Latency (ms)", default: 0, range: 0...5000, step: 100)
        drawer.action("reset", "Reset") { "3 items removed" }
        drawer.info("build", "Build", value: "1.0 (test)")
        try await withRunning([app]) {
            _ = try await app.connect(to: Endpoint(host: "127.0.0.1", port: daemon.port))
            _ = try await events.waitFor { $0.contains("event: drawer") && $0.contains("drawer-app") ? true : nil }

            let listed = try await daemon.ctl(["drawer", "drawer-app", "--json"])
            #expect(listed.status == 0, "\(listed)")
            for id in ["network.slow", "theme", "latency", "reset", "build"] { #expect(listed.stdout.contains(#""id":"\#(id)""#), "\(id)") }

            var slowValues = slow.values.makeAsyncIterator()
            #expect(await slowValues.next() == false)
            let set = try await daemon.ctl(["set", "drawer-app", "network.slow", "true"])
            #expect(set.status == 0 && set.stdout == "network.slow = true\n", "\(set)")
            #expect(await slowValues.next() == true)
            #expect(try await daemon.ctl(["set", "drawer-app", "theme", "dark"]).stdout == "theme = dark\n")
            #expect(theme.value == .dark)

            // Refused before the app sees anything.
            for (item, value, reason) in [
                ("latency", "150", "steps of 100"), ("latency", "6000", "outside the range"), ("latency", "\"fast\"", "takes a number"),
                ("theme", "blue", "no option \"blue\""), ("nothing", "1", "no item \"nothing\""), ("reset", "true", "is an action"),
                ("build", "\"2.0\"", "read-only"),
            ] {
                let refused = try await daemon.ctl(["set", "drawer-app", item, value])
                #expect(refused.status == 1 && refused.stderr.contains(reason), "\(item) \(value): \(refused)")
            }
            let nobody = try await daemon.ctl(["set", "nobody", "theme", "dark"])
            #expect(nobody.status == 1 && nobody.stderr.contains("no connected app with a drawer matches \"nobody\""), "\(nobody)")
            #expect(latency.value == 0 && theme.value == .dark)

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
        try await daemon.stop()
    }

    @Test("the Listr example's drawer: listed, a style switched changes its answers, the list emptied by an action")
    func listr() async throws {
        let listr = try await ParleyCtlTests.Listr()
        let daemon = try await Daemon(staticPeer: listr.port)
        _ = try await daemon.ctl(["peers", "--wait-for", "listr"])
        let events = try Child("/usr/bin/curl", ["-sN", daemon.webURL + "api/events"])
        _ = try await events.waitFor { $0.contains(": parley live events") ? true : nil }
        // The drawer is declared right after the connection; if it came before the stream opened, list it.
        if try await !daemon.ctl(["drawer", "listr"]).stdout.contains("list.style") {
            _ = try await events.waitFor { $0.contains("event: drawer") ? true : nil }
        }
        let listed = try await daemon.ctl(["drawer", "listr"])
        #expect(listed.stdout.contains("list.style") && listed.stdout.contains("checkboxes [checkboxes|bullets]"), "\(listed)")
        #expect(try await daemon.ctl(["send", "AddItemCommand", #"{"title":"milk"}"#, "--reply"]).status == 0)
        #expect(try await daemon.ctl(["set", "listr", "list.style", "bullets"]).status == 0)
        let shown = try await daemon.ctl(["send", "ListItemsCommand", "--reply"])
        #expect(shown.stdout.contains("• milk"), "\(shown)")
        let emptied = try await daemon.ctl(["invoke", "listr", "list.reset"])
        #expect(emptied.stdout == "removed 1 item\n", "\(emptied)")
        #expect(try await daemon.ctl(["send", "ListItemsCommand", "--reply"]).stdout.contains("the list is empty"))
        _ = try await events.stop()
        try await daemon.stop()
        try await listr.stop()
    }
}
