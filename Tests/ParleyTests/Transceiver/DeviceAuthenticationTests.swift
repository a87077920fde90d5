import Foundation
import NIOCore
@testable import Parley
import ParleyTestSupport
import ParleyWire
import Synchronization
import Testing

/// Transceivers that know each other by their device certificates, over TLS 1.3 on loopback: who gets in, what
/// both sides say when someone does not, and that nothing is routed to a device that is not trusted.
@Suite("Device authentication", .timeLimit(.minutes(2)))
struct DeviceAuthenticationTests {
    static func node(_ name: String, _ identity: DeviceIdentity, trusting: [DeviceIdentity], logs: LogCapture? = nil, listen: String? = "127.0.0.1") -> Transceiver {
        makeTransceiver(name, listen: listen, logs: logs) {
            $0.devices = DeviceAuthentication(identity: identity, trusting: Set(trusting.map(\.fingerprint)))
        }
    }

    @Test("devices that trust each other connect over TLS, each sees the other's fingerprint, and a typed request gets its reply")
    func trusted() async throws {
        let (serverIdentity, clientIdentity) = (try DeviceIdentity.generate(name: "server"), try DeviceIdentity.generate(name: "client"))
        let logs = LogCapture()
        let server = Self.node("server", serverIdentity, trusting: [clientIdentity], logs: logs)
        let client = Self.node("client", clientIdentity, trusting: [serverIdentity], listen: nil)
        server.respond(to: Echo.self) { echo, peer in Echo(text: echo.text + " from \(peer.device?.short ?? "nobody")") }
        try await withRunning([server, client]) {
            let peer = try await client.connect(to: server.loopbackEndpoint)
            #expect(peer.device == serverIdentity.fingerprint)
            #expect(try await client.request(Echo(text: "hi"), from: peer, expecting: Echo.self).text == "hi from \(clientIdentity.fingerprint.short)")
            #expect(await eventually(peersOf: server) { $0.contains { $0.device == clientIdentity.fingerprint } })
        }
        #expect(!logs.records(atLeast: .info, mentioning: "device certificates over TLS").isEmpty, "the start-up line names the mode")
        #expect(logs.all.contains { $0.metadata.values.contains { $0.contains(serverIdentity.fingerprint.short) } })
    }

    @Test("a device refused at accept (too many connections from its address) is told why in the node's own words, not as a TLS failure")
    func refusedAtAccept() async throws {
        let (serverIdentity, clientIdentity) = (try DeviceIdentity.generate(name: "server"), try DeviceIdentity.generate(name: "client"))
        let server = makeTransceiver("server", listen: "127.0.0.1") {
            $0.devices = DeviceAuthentication(identity: serverIdentity, trusting: [clientIdentity.fingerprint])
            $0.maximumConnectionsPerAddress = 1
        }
        let first = Self.node("first", clientIdentity, trusting: [serverIdentity], listen: nil)
        let second = Self.node("second", clientIdentity, trusting: [serverIdentity], listen: nil)
        try await withRunning([server, first, second]) {
            _ = try await first.connect(to: server.loopbackEndpoint)
            await #expect {
                _ = try await second.connect(to: server.loopbackEndpoint)
            } throws: { error in
                guard case .handshakeFailed(_, .refusedByPeer(.tooManyConnections, let message)) = error as? TransceiverError else { return false }
                return message.contains("at most 1 per address")
            }
        }
    }

    @Test("a device the acceptor does not trust is refused with device-not-trusted after the TLS handshake; no handler runs", arguments: [true, false])
    func notTrusted(byServer: Bool) async throws {
        let (serverIdentity, clientIdentity) = (try DeviceIdentity.generate(name: "server"), try DeviceIdentity.generate(name: "client"))
        let serverLogs = LogCapture()
        let server = Self.node("server", serverIdentity, trusting: byServer ? [] : [clientIdentity], logs: serverLogs)
        let client = Self.node("client", clientIdentity, trusting: byServer ? [serverIdentity] : [], listen: nil)
        let handled = Counter()
        server.receive(Echo.self) { _, _ in handled.increment() }
        try await withRunning([server, client]) {
            do {
                let peer = try await client.connect(to: server.loopbackEndpoint)
                try await client.send(Echo(text: "let me in"), to: peer)
                Issue.record("connected although one side does not trust the other")
            } catch TransceiverError.handshakeFailed(_, let error) {
                if byServer {
                    #expect(error == .refusedByPeer(code: .deviceNotTrusted, message: HandshakeError.deviceNotTrusted(fingerprint: clientIdentity.fingerprint.short).description))
                } else {
                    #expect(error == .deviceNotTrusted(fingerprint: serverIdentity.fingerprint.short))
                }
            }
            if byServer {
                #expect(await serverLogs.logged(atLeast: .info, mentioning: "device with fingerprint \(clientIdentity.fingerprint.short) is not trusted"))
            }
            // Never registered: the refusal came before either side's hello was accepted.
            #expect(server.peers.isEmpty && client.peers.isEmpty)
        }
        #expect(handled.count == 0)
    }

    @Test("a peer in open mode, or with a shared secret, meets a device node: refused with device-authentication-required, saying what to do")
    func cleartextPeer() async throws {
        let serverIdentity = try DeviceIdentity.generate(name: "server")
        let server = Self.node("server", serverIdentity, trusting: [])
        let handled = Counter()
        server.receive(Echo.self) { _, _ in handled.increment() }
        try await withRunning([server]) {
            for secret in [nil, SharedSecret.generate()] {
                let client = makeTransceiver("client", listen: nil) { $0.sharedSecret = secret }
                try await withRunning([client]) {
                    do {
                        _ = try await client.connect(to: server.loopbackEndpoint)
                        Issue.record("a cleartext peer got in")
                    } catch TransceiverError.handshakeFailed(_, let error) {
                        #expect(error.closeCode == .deviceAuthenticationRequired, "\(error)")
                        #expect("\(error)".contains("accepts only devices authenticated by their certificates over TLS"), "\(error)")
                    }
                }
            }
            // And a raw one that sends a message right after its hello.
            let socket = try await RawConnection.open(port: server.listeningPort!)
            // In one write: the refusal of the hello may close the connection before a second write is made.
            var bytes = ByteBuffer()
            rawHello().write(to: &bytes)
            Frame.message(MessageFrame(header: MessageHeader(typeName: Echo.messageType, id: MessageID(1)), payload: ByteBuffer(string: #"{"text":"x"}"#)))
                .write(to: &bytes)
            try await socket.write(Array(bytes.readableBytesView))
            let (frames, closed) = try await socket.frames()
            #expect(closed)
            #expect(frames.contains { if case .close(let close) = $0 { close.code == .deviceAuthenticationRequired } else { false } }, "\(frames)")
        }
        #expect(handled.count == 0)
    }

    @Test("a device node dialling an open node fails the TLS handshake with a clear error, and the open node stays up")
    func dialsOpenNode() async throws {
        let open = makeTransceiver("open")
        let device = Self.node("device", try DeviceIdentity.generate(name: "device"), trusting: [], listen: nil)
        try await withRunning([open, device]) {
            await #expect(throws: TransceiverError.self) { try await device.connect(to: open.loopbackEndpoint) }
            #expect(open.peers.isEmpty && device.peers.isEmpty)
        }
    }
}

extension DeviceAuthenticationTests {
    @Test("an untrusted device's first connection is a pairing request: both sides compute the same code; once trusted it connects; taken back, its open connection is closed at once and it is refused")
    func pairingThenRevoking() async throws {
        let (serverIdentity, clientIdentity) = (try DeviceIdentity.generate(name: "parleyd"), try DeviceIdentity.generate(name: "app"))
        let trusted = Mutex<Set<DeviceFingerprint>>([])
        let requests = Inbox<DeviceRequest>()
        let server = makeTransceiver("parleyd") {
            var devices = DeviceAuthentication(identity: serverIdentity) { fingerprint in trusted.withLock { $0.contains(fingerprint) } }
            devices.untrusted = { request in
                requests.put(request)
                return "pairing requested: code \(request.code); accept it on parleyd"
            }
            $0.devices = devices
        }
        let received = Inbox<String>()
        server.receive(Echo.self) { echo, _ in received.put(echo.text) }
        let client = Self.node("app", clientIdentity, trusting: [serverIdentity], listen: nil)
        try await withRunning([server, client]) {
            let expectedCode = PairingCode(serverIdentity.fingerprint, clientIdentity.fingerprint)
            do {
                _ = try await client.connect(to: server.loopbackEndpoint)
                Issue.record("an unpaired device got in")
            } catch TransceiverError.handshakeFailed(_, let error) {
                #expect(error == .pairingRequestedByPeer(code: "\(expectedCode)", message: "pairing requested: code \(expectedCode); accept it on parleyd"))
                #expect(error.closeCode == .pairingRequested)
            }
            let request = try await requests.next()
            #expect(request.fingerprint == clientIdentity.fingerprint && request.name == "app" && request.code == expectedCode)
            #expect(request.peerID == client.localPeerID)
            #expect(server.peers.isEmpty)

            trusted.withLock { _ = $0.insert(clientIdentity.fingerprint) }
            let peer = try await client.connect(to: server.loopbackEndpoint)
            try await client.send(Echo(text: "paired"), to: peer)
            #expect(try await received.next() == "paired")

            let events = client.peerEvents
            trusted.withLock { _ = $0.remove(clientIdentity.fingerprint) }
            #expect(server.disconnect(device: clientIdentity.fingerprint, message: "unpaired on parleyd") == 1)
            for await event in events {
                if case .disconnected(let gone, let reason) = event, gone.id == peer.id {
                    #expect(reason == .peerSaidGoodbye(.deviceNotTrusted, message: "unpaired on parleyd"), "\(reason)")
                    break
                }
            }
            await #expect(throws: TransceiverError.self) { try await client.connect(to: server.loopbackEndpoint) }
        }
    }

    @Test("a device taken back while its handshake runs (trusted at its first frame, not once registered) is closed with device-not-trusted and never reaches a handler, and its fingerprint is not reported as established")
    func takenBackDuringHandshake() async throws {
        let (serverIdentity, clientIdentity) = (try DeviceIdentity.generate(name: "parleyd"), try DeviceIdentity.generate(name: "app"))
        // The acceptor asks twice: at the first frame, and again once the peer is registered. The person's unpair
        // falls between the two.
        let asked = Mutex(0)
        let established = Mutex<[DeviceFingerprint]>([])
        let server = makeTransceiver("parleyd") {
            var devices = DeviceAuthentication(identity: serverIdentity) { _ in asked.withLock { $0 += 1; return $0 == 1 } }
            devices.established = { _, fingerprint in established.withLock { $0.append(fingerprint) } }
            $0.devices = devices
        }
        let received = Mutex<[String]>([])
        server.receive(Echo.self) { echo, _ in received.withLock { $0.append(echo.text) } }
        let client = Self.node("app", clientIdentity, trusting: [serverIdentity], listen: nil)
        try await withRunning([server, client]) {
            let serverEvents = server.peerEvents
            let clientEvents = client.peerEvents
            // The dialler may complete its side before the close frame arrives; either way the connection ends with
            // the acceptor's reason.
            if let peer = try? await client.connect(to: server.loopbackEndpoint) {
                try? await client.send(Echo(text: "after unpair"), to: peer)
                for await event in clientEvents {
                    if case .disconnected(let gone, let reason) = event, gone.id == peer.id {
                        #expect(reason == .peerSaidGoodbye(.deviceNotTrusted, message: "this device is not trusted by parleyd any more"), "\(reason)")
                        break
                    }
                }
            }
            // Registered before the second question, so the acceptor reports it gone.
            for await event in serverEvents {
                if case .disconnected(let gone, _) = event, gone.id == client.localPeerID { break }
            }
            #expect(server.peers.isEmpty)
            #expect(asked.withLock { $0 } == 2)
        }
        #expect(received.withLock { $0 }.isEmpty, "no handler ran for the device")
        #expect(established.withLock { $0 }.isEmpty, "a device refused once registered is not reported as established")
    }

    @Test("a node that also allows peers in the clear lets an open peer in beside a trusted device, each the way it came")
    func cleartextBesideDevices() async throws {
        let (serverIdentity, clientIdentity) = (try DeviceIdentity.generate(name: "parleyd"), try DeviceIdentity.generate(name: "app"))
        let server = makeTransceiver("parleyd") {
            $0.devices = DeviceAuthentication(identity: serverIdentity, allowsCleartext: true, trusting: [clientIdentity.fingerprint])
        }
        server.respond(to: Echo.self) { echo, peer in Echo(text: peer.device == nil ? "in the clear" : "device") }
        let device = Self.node("app", clientIdentity, trusting: [serverIdentity], listen: nil)
        let open = makeTransceiver("open", listen: nil)
        try await withRunning([server, device, open]) {
            let viaTLS = try await device.connect(to: server.loopbackEndpoint)
            let inTheClear = try await open.connect(to: server.loopbackEndpoint)
            #expect(try await device.request(Echo(text: ""), from: viaTLS, expecting: Echo.self).text == "device")
            #expect(try await open.request(Echo(text: ""), from: inTheClear, expecting: Echo.self).text == "in the clear")
            #expect(inTheClear.device == nil && viaTLS.device == serverIdentity.fingerprint)
        }
    }
}
