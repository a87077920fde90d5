import Foundation
import Parley
import ParleyControl
import ParleyTestSupport
import Testing

/// `parleyctl --direct --paired` as a device of its own, and the examples' identities: real processes on loopback,
/// each identity in a directory of the test's own.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct DirectDeviceTests {
    /// The code after "the code here is " in `text`, as a code is written: "123 456".
    static func code(in text: String) -> String? {
        guard let range = text.range(of: "the code here is ") else { return nil }
        return String(text[range.upperBound...].prefix(7))
    }

    @Test("parleyctl --direct --paired asks parleyd to pair and shows the code parleyd shows; accepted, it gets in over TLS and pins parleyd")
    func pairWithParleyd() async throws {
        let directory = try ScratchDirectory(prefix: "parleyctl-device")
        let daemon = try await ParleydProcess.start(staticPeer: nil)
        let direct = ["peers", "--direct", "--paired", "--device-directory", directory.path, "--peer", "127.0.0.1:\(daemon.port)", "--json"]

        let asked = try await ChildProcess.run("parleyctl", direct + ["--wait", "1"])
        let shown = try #require(Self.code(in: asked.stderr), "\(asked)")
        #expect(asked.stdout.isEmpty, "nothing is listed before the pairing is accepted: \(asked)")
        let me = try DeviceIdentity.loadOrCreate(in: directory.path, name: "parleyctl")
        #expect(asked.stderr.contains("this device is \(me.fingerprint.short)") && asked.stderr.contains("parleyctl pair accept"), "\(asked.stderr)")
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        let pending = try decoder.decode(DeviceControl.DeviceList.self, from: Data(try await daemon.ctl(["pair", "--json"]).stdout.utf8))
        #expect(pending.pending.map(\.fingerprint) == [me.fingerprint.full] && pending.pending.first?.name == "parleyctl")
        #expect(pending.pending.first?.code == shown, "both sides show one code")
        let parleyd = try #require(DeviceFingerprint(pending.fingerprint))
        #expect(shown == "\(PairingCode(me.fingerprint, parleyd))")

        #expect(try await daemon.ctl(["pair", "accept", me.fingerprint.short]).status == 0)
        let listed = try await ChildProcess.run("parleyctl", direct + ["--wait", "20"])
        #expect(listed.status == 0 && listed.stdout.contains(#""address":"127.0.0.1:\#(daemon.port)","#), "\(listed)")
        #expect(Self.code(in: listed.stderr) == nil, "\(listed.stderr)")
        let pinned = try String(contentsOfFile: directory.file("paired-debuggers.json"), encoding: .utf8)
        #expect(pinned.contains(parleyd.full), "\(pinned)")
        #expect(try await daemon.stop() == 0)
    }

    @Test("listr-example keeps one device identity across runs; a device it does not trust is asked to pair with the code on both sides; named with --trust-device it gets in over TLS; peers in the clear are unaffected")
    func listrDevices() async throws {
        let directory = try ScratchDirectory(prefix: "parleyctl-device")
        let listrDevice = directory.file("listr.device")
        let listr = try await ParleyCtlTests.Listr(arguments: ["--device-directory", listrDevice])
        let identity = try DeviceIdentity.loadOrCreate(in: listrDevice, name: "listr")
        #expect(listr.child.stdout.contains("listr ready on port \(listr.port) as listr, device \(identity.fingerprint.short)"), "\(listr.child.stdout)")
        let paired = ["--paired", "--device-directory", directory.file("parleyctl.device"), "--wait-peer", "1"]

        let refused = try await listr.send(["AddItemCommand", #"{"title":"milk"}"#, "--reply"] + paired)
        #expect(refused.status != 0, "\(refused)")
        let shown = try #require(Self.code(in: refused.stderr), "\(refused)")
        let me = try DeviceIdentity.loadOrCreate(in: directory.file("parleyctl.device"), name: "parleyctl")
        #expect(shown == "\(PairingCode(me.fingerprint, identity.fingerprint))")
        let request = try await listr.child.waitFor { $0.contains("asks to pair") ? $0 : nil }
        #expect(request.contains("the code here is \(shown)") && request.contains("--trust-device \(me.fingerprint.short)"), "\(request)")
        // Nothing crossed before the pairing; and a peer in the clear gets in as before.
        #expect(try await listr.send(["ListItemsCommand", "--reply"]).stdout == "the list is empty\n")
        try await listr.stop()

        let trusting = try await ParleyCtlTests.Listr(arguments: ["--device-directory", listrDevice, "--trust-device", me.fingerprint.short])
        #expect(trusting.child.stdout.contains("device \(identity.fingerprint.short)"), "the same identity on the next run")
        let added = try await trusting.send(["AddItemCommand", #"{"title":"milk"}"#, "--reply"] + paired)
        #expect(added.status == 0 && added.stdout == "added \"milk\" (1 item on the list)\n", "\(added)")
        try await trusting.stop()
    }

    @Test("--paired and its options are for --direct, --device-directory goes with --paired, and listen refuses --paired")
    func pairedOptionsNeedDirect() async throws {
        let through = try await ChildProcess.run("parleyctl", ["send", "X", "--paired"])
        #expect(through.status == 2 && through.stderr.contains("--paired, --debugger and --device-directory are for --direct"), "\(through)")
        let alone = try await ChildProcess.run("parleyctl", ["peers", "--direct", "--device-directory", "/tmp/x"])
        #expect(alone.status == 2 && alone.stderr.contains("give --paired too"), "\(alone)")
        let listening = try await ChildProcess.run("parleyctl", ["listen", "--direct", "--paired", "--no-discovery"])
        #expect(listening.status == 2 && listening.stderr.contains("--paired is for the commands that dial parleyds"), "\(listening)")
    }

    @Test("parley-example --devices keeps both peers' identities in the directory and connects them over TLS with each other's certificate")
    func parleyExampleDevices() async throws {
        let scratch = try ScratchDirectory(prefix: "example")
        let first = try await ChildProcess.run("parley-example", ["--devices", scratch.path])
        #expect(first.status == 0, "\(first)")
        let tablet = try DeviceIdentity.loadOrCreate(in: scratch.file("kitchen-tablet"), name: "kitchen-tablet")
        let phone = try DeviceIdentity.loadOrCreate(in: scratch.file("phone"), name: "phone")
        let line = "phone: connected to kitchen-tablet (devices over TLS 1.3: tablet \(tablet.fingerprint.short), phone \(phone.fingerprint.short))"
        #expect(first.stdout.contains(line), "\(first.stdout)")
        #expect(first.stdout.contains(#"phone: the list is ["milk", "eggs"]"#), "\(first.stdout)")
        let second = try await ChildProcess.run("parley-example", ["--devices", scratch.path])
        #expect(second.stdout.contains(line), "the same identities on the next run: \(second.stdout)")
    }
}
