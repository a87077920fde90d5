import Foundation
import NIOCore
@testable import Parley
import ParleyTestSupport
import ParleyWire
import Testing

/// Transceivers with a shared secret over real TCP on loopback: who gets in, what both sides say when someone
/// does not, and that nothing is routed before the proofs.
@Suite("Authentication", .timeLimit(.minutes(2)))
struct AuthenticationTests {
    static func node(_ name: String, secret: SharedSecret?, logs: LogCapture? = nil, listen: String? = "127.0.0.1",
                     adjust: (inout TransceiverConfiguration) -> Void = { _ in }) -> Transceiver {
        makeTransceiver(name, listen: listen, logs: logs) {
            $0.sharedSecret = secret
            adjust(&$0)
        }
    }

    /// No log line, message or metadata, contains the secret in its file form.
    static func expectSecretNotLogged(_ secret: SharedSecret, in logs: LogCapture, sourceLocation: SourceLocation = #_sourceLocation) {
        let text = secret.fileText.trimmingCharacters(in: .whitespacesAndNewlines)
        let leaks = logs.all.filter { record in
            record.message.contains(text) || record.metadata.values.contains { $0.contains(text) }
        }
        #expect(leaks.isEmpty, "the secret appears in \(leaks.map(\.message))", sourceLocation: sourceLocation)
    }

    @Test("with the same secret peers connect and a typed request gets its reply")
    func sameSecret() async throws {
        let secret = SharedSecret.generate()
        let serverLogs = LogCapture()
        let server = Self.node("server", secret: secret, logs: serverLogs)
        let client = Self.node("client", secret: secret, listen: nil)
        server.respond(to: Echo.self) { echo, _ in Echo(text: echo.text + "!") }
        try await withRunning([server, client]) {
            let peer = try await client.connect(to: server.loopbackEndpoint)
            #expect(try await client.request(Echo(text: "hi"), from: peer, expecting: Echo.self).text == "hi!")
            #expect(await eventually(peersOf: server) { $0.contains { $0.name == "client" } })
        }
        #expect(!serverLogs.records(atLeast: .info, mentioning: "shared secret").isEmpty, "the start-up line names the mode")
        Self.expectSecretNotLogged(secret, in: serverLogs)
    }

    @Test("with different secrets both sides fail with wrongSecret, and the logs give the reason but not the secret")
    func wrongSecret() async throws {
        let (serverSecret, clientSecret) = (SharedSecret.generate(), SharedSecret.generate())
        let serverLogs = LogCapture()
        let clientLogs = LogCapture()
        let server = Self.node("server", secret: serverSecret, logs: serverLogs)
        let client = Self.node("client", secret: clientSecret, logs: clientLogs, listen: nil)
        let handled = Counter()
        server.receive(Echo.self) { _, _ in handled.increment() }
        try await withRunning([server, client]) {
            do {
                _ = try await client.connect(to: server.loopbackEndpoint)
                Issue.record("connected with the wrong secret")
            } catch TransceiverError.handshakeFailed(_, let error) {
                #expect(error == .wrongSecret)
                #expect("\(error)".contains("the peer does not know this node's shared secret"))
            }
            #expect(await serverLogs.logged(mentioning: "the peer does not know this node's shared secret"))
            #expect(!clientLogs.records(mentioning: "the peer does not know this node's shared secret").isEmpty)
            #expect(server.peers.isEmpty && client.peers.isEmpty)
        }
        #expect(handled.count == 0)
        for logs in [serverLogs, clientLogs] {
            Self.expectSecretNotLogged(serverSecret, in: logs)
            Self.expectSecretNotLogged(clientSecret, in: logs)
        }
    }

    @Test("when only one side has a secret, both refuse and both say a shared secret is required", arguments: [true, false])
    func secretOnOneSide(serverHasSecret: Bool) async throws {
        let secret = SharedSecret.generate()
        let serverLogs = LogCapture()
        let clientLogs = LogCapture()
        let server = Self.node("server", secret: serverHasSecret ? secret : nil, logs: serverLogs)
        let client = Self.node("client", secret: serverHasSecret ? nil : secret, logs: clientLogs, listen: nil)
        try await withRunning([server, client]) {
            do {
                _ = try await client.connect(to: server.loopbackEndpoint)
                Issue.record("connected although only one side has a secret")
            } catch TransceiverError.handshakeFailed(_, let error) {
                #expect(error == (serverHasSecret ? .secretRequiredByPeer : .peerHasNoSecret))
                #expect("\(error)".contains("requires a shared secret"))
            }
            let serverReason = serverHasSecret ? "this node requires a shared secret" : "the peer requires a shared secret; configure secretFile"
            #expect(await serverLogs.logged(mentioning: serverReason))
            #expect(server.peers.isEmpty && client.peers.isEmpty)
        }
        Self.expectSecretNotLogged(secret, in: serverLogs)
        Self.expectSecretNotLogged(secret, in: clientLogs)
    }

    @Test("a raw peer that answers the acceptor's proof with a message is closed, and no handler runs")
    func messageInsteadOfProof() async throws {
        let logs = LogCapture()
        let server = Self.node("server", secret: .generate(), logs: logs)
        let handled = Counter()
        server.respond(to: Echo.self) { echo, _ in
            handled.increment()
            return echo
        }
        try await withRunning([server]) {
            let socket = try await RawConnection.open(port: server.listeningPort!)
            // A well-formed offer from someone who does not know the secret, then a request right away.
            let offer = SharedSecretAuthenticator(secret: .generate()).offer
            let offerJSON = #"{"scheme":"\#(offer.scheme)","nonce":"\#(offer.nonce)","key":"\#(offer.key)"}"#
            try await socket.write(rawHello(json: #"{"peerID":"\#(UUID().uuidString)","name":"raw","capabilities":[],"accepts":[],"auth":\#(offerJSON)}"#))
            let request = MessageHeader(typeName: Echo.messageType, id: MessageID(1), flags: .expectsReply)
            try await socket.write(.message(MessageFrame(header: request, payload: ByteBuffer(string: #"{"text":"let me in"}"#))))
            let (frames, closed) = try await socket.frames()
            #expect(closed)
            #expect(frames.count == 3, "\(frames)")
            guard frames.count == 3, case .hello = frames[0], case .auth = frames[1], case .close(let close) = frames[2] else {
                Issue.record("expected hello, auth and close, got \(frames)")
                return
            }
            #expect(close.code == .protocolViolation && close.message.contains("proof of the shared secret"))
            #expect(await logs.logged(mentioning: "expected the peer's auth frame"))
        }
        #expect(handled.count == 0)
    }

    @Test("a raw peer without an offer is refused at its hello: its message never reaches a handler")
    func messageWithoutOffer() async throws {
        let server = Self.node("server", secret: .generate())
        let handled = Counter()
        server.receive(Echo.self) { _, _ in handled.increment() }
        try await withRunning([server]) {
            let socket = try await RawConnection.open(port: server.listeningPort!)
            // The hello and the message in one write: written apart, the second could meet the connection the
            // refusal of the first had already closed.
            var bytes = ByteBuffer()
            rawHello().write(to: &bytes)
            Frame.message(MessageFrame(header: MessageHeader(typeName: Echo.messageType, id: MessageID(1)), payload: ByteBuffer(string: #"{"text":"x"}"#)))
                .write(to: &bytes)
            try await socket.write(Array(bytes.readableBytesView))
            let (frames, closed) = try await socket.frames()
            #expect(closed)
            #expect(frames.count == 1 && { if case .close(let close) = frames.first { close.code == .authenticationRequired } else { false } }(), "\(frames)")
        }
        #expect(handled.count == 0)
    }

    @Test("with a secret an app in the original framing is refused with a log line, unless explicitly allowed", arguments: [false, true])
    func originalFramingApps(allowed: Bool) async throws {
        let logs = LogCapture()
        let server = Self.node("server", secret: .generate(), logs: logs) {
            $0.originalFraming = OriginalFramingSupport(translator: VerbatimTranslator(), allowedWithoutSecret: allowed)
        }
        let inbox = Inbox<ByteBuffer>()
        server.receiveRaw(typeName: VerbatimTranslator.inbound) { message, _ in inbox.put(message.payload) }
        try await withRunning([server]) {
            let socket = try await RawConnection.open(port: server.listeningPort!)
            let json = #"{"state":{},"action":"tap","imageData":""}"#
            try await socket.write([206] + withUnsafeBytes(of: Int32(json.utf8.count).littleEndian, Array.init) + Array(json.utf8))
            if allowed {
                #expect(try await inbox.take() == [ByteBuffer(string: json)])
            } else {
                let (bytes, closed) = try await socket.bytes()
                #expect(closed && bytes.isEmpty, "the app must get nothing it cannot parse")
                #expect(await logs.logged(mentioning: "cannot authenticate"))
                #expect(server.peers.isEmpty)
            }
        }
    }

    @Test("a node with a secret that dials itself authenticates, then refuses the connection as connected-to-self")
    func connectToSelf() async throws {
        let logs = LogCapture()
        let node = Self.node("node", secret: .generate(), logs: logs)
        try await withRunning([node]) {
            do {
                try await node.connect(to: node.loopbackEndpoint)
                Issue.record("connected to itself")
            } catch TransceiverError.handshakeFailed(_, let error) {
                #expect(error.closeCode == .connectedToSelf, "\(error)")
            }
            #expect(node.peers.isEmpty)
        }
        #expect(logs.records(mentioning: "shared secret").isEmpty, "the proofs passed: \(logs.records(mentioning: "shared secret").map(\.message))")
    }

    @Test("a control-socket client is not asked for the secret")
    func controlSocketIsOpen() async throws {
        // A directory of its own: parleyd refuses one others may write to, such as /tmp itself.
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("parley-auth-\(UUID().uuidString.prefix(8))")
        let path = directory.appendingPathComponent("node.sock").path
        let server = Self.node("server", secret: .generate()) { $0.controlSocketPath = path }
        let client = Self.node("local-tool", secret: nil, listen: nil)
        server.respond(to: Echo.self) { echo, _ in echo }
        try await withRunning([server, client]) {
            let peer = try await client.connect(toUnixSocket: path)
            #expect(try await client.request(Echo(text: "local"), from: peer, expecting: Echo.self).text == "local")
        }
        try? FileManager.default.removeItem(at: directory)
    }
}
