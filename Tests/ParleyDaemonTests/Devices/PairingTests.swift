import Foundation
import Parley
import ParleyControl
import ParleyTestSupport
import Testing

/// parleyd and devices: a real parleyd process, apps as transceivers with device identities of the tests' own over
/// TLS on loopback, a person as `parleyctl pair`, `devices` and `unpair`.
@Suite("parleyd: pairing devices", .serialized, .timeLimit(.minutes(3)))
struct PairingTests {
    /// An app that trusts the debugger with `fingerprint` and nothing else.
    static func app(_ name: String, _ identity: DeviceIdentity, trusting fingerprint: DeviceFingerprint) -> Transceiver {
        var configuration = TransceiverConfiguration(name: name, identity: .ephemeral, listenHost: nil, port: 0)
        configuration.devices = DeviceAuthentication(identity: identity, trusting: [fingerprint])
        return Transceiver(configuration: configuration)
    }

    static func json<T: Decodable>(_ type: T.Type, _ result: (status: Int32, stdout: String, stderr: String)) throws -> T {
        #expect(result.status == 0, "\(result)")
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try decoder.decode(type, from: Data(result.stdout.utf8))
    }

    @Test("an unpaired app asks to pair and gets nothing; parleyctl pair shows the same code; accepted, it gets in, after a restart too; unpaired, its connection closes at once")
    func pairAcceptUnpair() async throws {
        let daemon = try await ParleydProcess.start()
        let status = try Self.json(Control.StatusReport.self, try await daemon.ctl(["status", "--json"]))
        let debugger = try #require(status.fingerprint.flatMap(DeviceFingerprint.init))
        #expect(try await daemon.ctl(["status"]).stdout.contains("device:        \(debugger.short)"))

        let identity = try DeviceIdentity.generate(name: "listr")
        let app = Self.app("listr", identity, trusting: debugger)
        try await app.start()
        let code = PairingCode(debugger, identity.fingerprint)
        do {
            _ = try await app.connect(to: daemon.endpoint)
            Issue.record("an unpaired app got in")
        } catch TransceiverError.handshakeFailed(_, let error) {
            guard case .pairingRequestedByPeer(let shown, let message) = error else {
                Issue.record("\(error)")
                return
            }
            #expect(shown == "\(code)" && message.contains("parleyctl pair accept \(identity.fingerprint.short)"), "\(message)")
        }
        let waiting = try Self.json(DeviceControl.DeviceList.self, try await daemon.ctl(["pair", "--json"]))
        #expect(waiting.pending.map(\.fingerprint) == [identity.fingerprint.full] && waiting.pending.first?.code == "\(code)")
        #expect(waiting.pending.first?.name == "listr" && waiting.paired.isEmpty && waiting.fingerprint == debugger.full)
        let table = try await daemon.ctl(["pair"])
        #expect(table.stdout.contains(identity.fingerprint.short) && table.stdout.contains("\(code)"), "\(table)")
        let line = try await daemon.logLine(containing: "a device asks to pair", count: 1)
        #expect(line.contains("\(code)") && line.contains(identity.fingerprint.short), "\(line)")

        // A prefix that names nobody, then the right one.
        let nobody = try await daemon.ctl(["pair", "accept", "2222"])
        #expect(nobody.status != 0 && nobody.stderr.contains("no device's fingerprint begins with 2222"), "\(nobody)")
        let accepted = try await daemon.ctl(["pair", "accept", String(identity.fingerprint.short.prefix(9))])
        #expect(accepted.status == 0 && accepted.stdout.contains("paired listr"), "\(accepted)")

        let parleyd = try await app.connect(to: daemon.endpoint)
        #expect(parleyd.device == debugger)
        let devices = try Self.json(DeviceControl.DeviceList.self, try await daemon.ctl(["devices", "--json"]))
        #expect(devices.paired.map(\.fingerprint) == [identity.fingerprint.full] && devices.paired.first?.connected == true && devices.pending.isEmpty)

        // Taken back: the open connection closes at once, with the reason.
        let events = app.peerEvents
        let unpaired = try await daemon.ctl(["unpair", identity.fingerprint.short])
        #expect(unpaired.status == 0 && unpaired.stdout.contains("1 open connection closed"), "\(unpaired)")
        for await event in events {
            if case .disconnected(let gone, let reason) = event, gone.id == parleyd.id {
                guard case .peerSaidGoodbye(.deviceNotTrusted, _) = reason else {
                    Issue.record("\(reason)")
                    break
                }
                break
            }
        }
        await #expect(throws: TransceiverError.self) { try await app.connect(to: daemon.endpoint) }
        await app.stop()
        #expect(try await daemon.stop() == 0)
    }

    @Test("a copy of a revoked device's state directory is the revoked device: parleyd refuses it (a pairing request again, nothing stored) while another paired device stays in")
    func copiedStateDirectoryAfterRevoking() async throws {
        let scratch = try ScratchDirectory(prefix: "devices")
        let original = scratch.file("phone.device")
        let identity = try DeviceIdentity.loadOrCreate(in: original, name: "phone")
        let other = try DeviceIdentity.generate(name: "tablet")
        let daemon = try await ParleydProcess.start()
        let parleyd = try #require(DeviceFingerprint(try Self.json(DeviceControl.DeviceList.self, try await daemon.ctl(["pair", "--json"])).fingerprint))
        for device in [identity, other] {
            let app = Self.app(device.name, device, trusting: parleyd)
            try await app.start()
            _ = try? await app.connect(to: daemon.endpoint)
            await app.stop()
            #expect(try await daemon.ctl(["pair", "accept", device.fingerprint.short]).status == 0)
        }
        #expect(try await daemon.ctl(["unpair", identity.fingerprint.short]).status == 0)

        // Someone copied the phone's directory before it was revoked (a backup, another machine).
        let copy = scratch.file("copy.device")
        try FileManager.default.copyItem(atPath: original, toPath: copy)
        let copied = try DeviceIdentity.loadOrCreate(in: copy, name: "phone")
        #expect(copied.fingerprint == identity.fingerprint)
        let impostor = Self.app("phone", copied, trusting: parleyd)
        try await impostor.start()
        do {
            _ = try await impostor.connect(to: daemon.endpoint)
            Issue.record("a copy of a revoked device got in")
        } catch TransceiverError.handshakeFailed(_, let error) {
            #expect(error.closeCode == .pairingRequested, "\(error)")
        }
        await impostor.stop()
        let tablet = Self.app("tablet", other, trusting: parleyd)
        try await tablet.start()
        #expect(try await tablet.connect(to: daemon.endpoint).device == parleyd, "the other paired device is unaffected")
        await tablet.stop()
        let devices = try Self.json(DeviceControl.DeviceList.self, try await daemon.ctl(["devices", "--json"]))
        #expect(devices.paired.map(\DeviceControl.PairedDevice.fingerprint) == [other.fingerprint.full])
        #expect(devices.pending.map(\DeviceControl.PairingRequest.fingerprint) == [identity.fingerprint.full], "the copy is a request a person would have to accept again")
        #expect(try await daemon.stop() == 0)
    }

    @Test("parleyd keeps its identity and its paired devices across a restart; its key file is owner-only")
    func restart() async throws {
        let daemon = try await ParleydProcess.start()
        let first = try Self.json(Control.StatusReport.self, try await daemon.ctl(["status", "--json"])).fingerprint
        let identity = try DeviceIdentity.generate(name: "app")
        let debugger = try #require(first.flatMap(DeviceFingerprint.init))
        let app = Self.app("app", identity, trusting: debugger)
        try await app.start()
        _ = try? await app.connect(to: daemon.endpoint)
        #expect(try await daemon.ctl(["pair", "accept", identity.fingerprint.short]).status == 0)
        #expect(try await daemon.stop() == 0)
        let mode = try FileManager.default.attributesOfItem(atPath: daemon.directory.file(DeviceIdentity.keyFileName))[.posixPermissions] as? Int
        #expect(mode == 0o600)

        let again = try await ParleydProcess.start(in: daemon.directory)
        #expect(try Self.json(Control.StatusReport.self, try await again.ctl(["status", "--json"])).fingerprint == first)
        let peer = try await app.connect(to: again.endpoint)
        #expect(peer.device == debugger)
        await app.stop()
        #expect(try await again.stop() == 0)
    }
}

extension PairingTests {
    @Test("a machine in the middle of a pairing: the app and parleyd show different codes, and parleyd's request names the middle's fingerprint, not the app's")
    func machineInTheMiddle() async throws {
        let daemon = try await ParleydProcess.start()
        let debugger = try #require(try Self.json(Control.StatusReport.self, try await daemon.ctl(["status", "--json"])).fingerprint.flatMap(DeviceFingerprint.init))
        // The middle poses as the debugger to the app (its own certificate: it has no other) and as the app to
        // parleyd, passing the app's hello on.
        let middleIdentity = try DeviceIdentity.generate(name: "middle")
        let heard = Inbox<DeviceRequest>()
        var middleConfiguration = TransceiverConfiguration(name: "testd", identity: .ephemeral, listenHost: "127.0.0.1", port: 0)
        var middleDevices = DeviceAuthentication(identity: middleIdentity) { _ in false }
        middleDevices.untrusted = { request in
            heard.put(request)
            return "pairing requested: code \(request.code)"
        }
        middleConfiguration.devices = middleDevices
        let middle = Transceiver(configuration: middleConfiguration)
        try await middle.start()
        // The app trusts whatever it reaches while it has paired with nothing: it dials the middle.
        let appIdentity = try DeviceIdentity.generate(name: "listr")
        var appConfiguration = TransceiverConfiguration(name: "listr", identity: .ephemeral, listenHost: nil, port: 0)
        appConfiguration.devices = DeviceAuthentication(identity: appIdentity) { _ in true }
        let app = Transceiver(configuration: appConfiguration)
        try await app.start()
        var appCode: String?
        do {
            _ = try await app.connect(to: Endpoint(host: "127.0.0.1", port: middle.listeningPort!))
        } catch TransceiverError.handshakeFailed(_, .pairingRequestedByPeer(let code, _)) {
            appCode = code
        }
        let request = try await heard.next()
        // The middle now asks parleyd in the app's name, with the only certificate it has.
        let relay = Self.app("listr", middleIdentity, trusting: debugger)
        try await relay.start()
        _ = try? await relay.connect(to: daemon.endpoint)
        let pending = try Self.json(DeviceControl.DeviceList.self, try await daemon.ctl(["pair", "--json"])).pending
        #expect(pending.map(\.fingerprint) == [middleIdentity.fingerprint.full] && pending.first?.name == "listr")
        let parleydCode = try #require(pending.first?.code)
        #expect(appCode == "\(PairingCode(appIdentity.fingerprint, middleIdentity.fingerprint))" && request.fingerprint == appIdentity.fingerprint)
        #expect(appCode != parleydCode, "the person compares \(appCode ?? "?") on the app with \(parleydCode) on parleyd and refuses")
        await relay.stop()
        await app.stop()
        await middle.stop()
        #expect(try await daemon.stop() == 0)
    }
}
