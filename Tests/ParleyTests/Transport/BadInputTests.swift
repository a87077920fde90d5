import Foundation
import NIOCore
@testable import Parley
import ParleyTestSupport
import ParleyWire
import Testing

/// Each case sends one kind of bad input on one connection and checks that exactly that connection is closed,
/// with a logged reason, while a well-behaved peer on another connection carries on.
@Suite("Bad input", .timeLimit(.minutes(2)))
struct BadInputTests {
    /// Runs `attack` against a server that also serves a normal client, then checks the normal client still works.
    func withServer(
        maximumFrameSize: Int = FrameLayout.defaultMaximumBodySize,
        handshakeTimeout: Duration = .seconds(5),
        _ attack: (Transceiver, LogCapture) async throws -> Void
    ) async throws {
        let logs = LogCapture()
        let server = makeTransceiver("server", logs: logs) {
            $0.maximumFrameSize = maximumFrameSize
            $0.handshakeTimeout = handshakeTimeout
            $0.originalFraming = OriginalFramingSupport(translator: VerbatimTranslator())
        }
        let client = makeTransceiver("client", listen: nil)
        server.respond(to: Echo.self) { echo, _ in echo }
        try await withRunning([server, client]) {
            let peer = try await client.connect(to: server.loopbackEndpoint)
            try await attack(server, logs)
            #expect(try await client.request(Echo(text: "unaffected"), from: peer, expecting: Echo.self).text == "unaffected")
            #expect(server.peers.contains { $0.name == "client" })
        }
    }

    @Test("frames pipelined right behind the hello, then the end of the stream, in one write: every one is handled")
    func pipelinedThenEOF() async throws {
        let server = makeTransceiver("server")
        let handled = Inbox<String>()
        server.receiveRaw(typeName: "test.Pipelined") { message, _ in handled.put(String(buffer: message.payload)) }
        try await withRunning([server]) {
            let socket = try await RawConnection.open(port: server.listeningPort!)
            var bytes = ByteBuffer()
            rawHello().write(to: &bytes)
            for index in 1...20 {
                Frame.message(MessageFrame(header: MessageHeader(typeName: "test.Pipelined", id: MessageID(UInt64(index))), payload: ByteBuffer(string: "\(index)")))
                    .write(to: &bytes)
            }
            try await socket.write(Array(bytes.readableBytesView))
            await socket.shutdownOutput()
            #expect(try await handled.take(20) == (1...20).map(String.init))
        }
    }

    @Test("a length above the maximum closes that connection with frame-too-large")
    func oversizedFrame() async throws {
        try await withServer(maximumFrameSize: 1024) { server, logs in
            let socket = try await RawConnection.open(port: server.listeningPort!)
            try await socket.write(rawHello())
            try await socket.write([207] + withUnsafeBytes(of: UInt32(5000).littleEndian, Array.init) + [0x10])
            let (frames, closed) = try await socket.frames()
            #expect(closed)
            #expect(frames.contains { if case .close(let close) = $0 { close.code == .frameTooLarge } else { false } })
            #expect(!logs.records(mentioning: "exceeds the maximum of 1024 bytes").isEmpty)
        }
    }

    @Test("a wrong start byte closes that connection and the log names the byte")
    func wrongStartByte() async throws {
        try await withServer { server, logs in
            let socket = try await RawConnection.open(port: server.listeningPort!)
            try await socket.write(Array("GET / HTTP/1.1\r\n\r\n".utf8))
            #expect(try await socket.bytes().closed)
            #expect(await logs.logged(mentioning: "unexpected start byte 0x47"))
        }
    }

    @Test("a frame cut off by the end of the connection is logged as truncated")
    func truncatedFrame() async throws {
        try await withServer { server, logs in
            let socket = try await RawConnection.open(port: server.listeningPort!)
            try await socket.write(rawHello())
            try await socket.write([207] + withUnsafeBytes(of: UInt32(100).littleEndian, Array.init) + [0x10, 0, 1])
            await socket.shutdownOutput()
            #expect(try await socket.bytes().closed)
            #expect(await logs.logged(mentioning: "connection ended inside a frame"))
        }
    }

    @Test("a hello with invalid JSON is refused with a close frame and a log line")
    func invalidJSON() async throws {
        try await withServer { server, logs in
            let socket = try await RawConnection.open(port: server.listeningPort!)
            try await socket.write(rawHello(json: "{this is not json"))
            let (frames, closed) = try await socket.frames()
            #expect(closed)
            #expect(frames.contains { if case .close(let close) = $0 { close.code == .protocolViolation } else { false } })
            #expect(await logs.logged(mentioning: "malformed hello"))
        }
    }

    @Test("an unknown protocol version is refused, and the refused side is told which versions are spoken")
    func unknownVersionAsAcceptor() async throws {
        try await withServer { server, logs in
            let socket = try await RawConnection.open(port: server.listeningPort!)
            try await socket.write(rawHello(minimum: 9, maximum: 9))
            let (frames, closed) = try await socket.frames()
            #expect(closed)
            let close = frames.compactMap { if case .close(let close) = $0 { close } else { nil } }.first
            #expect(close?.code == .incompatibleVersion)
            #expect(close?.message.contains("version 1") == true && close?.message.contains("version 9") == true)
            #expect(await logs.logged(mentioning: "incompatible protocol versions"))
        }
    }

    @Test("a peer that answers with an unknown version makes connect throw a clear error")
    func unknownVersionAsDialer() async throws {
        let listener = try await RawConnection.Listener.open()
        let client = makeTransceiver("client", listen: nil)
        try await withRunning([client]) {
            let serverSide = Task {
                let socket = try await listener.accept()
                let hello = try await socket.waitForFrames(1)
                try await socket.write(rawHello(minimum: 5, maximum: 6))
                return (hello, try await socket.frames(timeout: .seconds(10)).frames)
            }
            do {
                try await client.connect(to: Endpoint(host: "127.0.0.1", port: listener.port))
                Issue.record("connected to an incompatible peer")
            } catch TransceiverError.handshakeFailed(_, .incompatibleVersion(let local, let remote)) {
                #expect(local == 1...1 && remote == 5...6)
            }
            let (hello, afterwards) = try await serverSide.value
            #expect(hello.count == 1)
            #expect(afterwards.contains { if case .close(let close) = $0 { close.code == .incompatibleVersion } else { false } })
        }
    }

    @Test("a connection that starts a hello and never finishes it is closed after the handshake timeout")
    func handshakeTimeout() async throws {
        try await withServer(handshakeTimeout: .seconds(1)) { server, logs in
            let socket = try await RawConnection.open(port: server.listeningPort!)
            let started = Date()
            try await socket.write([207, 0x30])
            let (frames, closed) = try await socket.frames(timeout: .seconds(10))
            // Not before the timeout; the upper bound is the read's own 10 s limit, so a busy machine cannot fail it.
            #expect(closed && Date().timeIntervalSince(started) >= 1)
            #expect(frames.contains { if case .close(let close) = $0 { close.code == .handshakeTimeout } else { false } })
            #expect(await logs.logged(mentioning: "no hello within"))
        }
    }

    @Test("a connection that sends nothing is kept past the handshake timeout, as an original debugger app before its first state")
    func silentConnectionKept() async throws {
        try await withServer(handshakeTimeout: .seconds(1)) { server, _ in
            let inbox = Inbox<ByteBuffer>()
            server.receiveRaw(typeName: VerbatimTranslator.inbound) { message, _ in inbox.put(message.payload) }
            let socket = try await RawConnection.open(port: server.listeningPort!)
            let (bytes, closed) = try await socket.bytes(timeout: .seconds(2.5))
            #expect(!closed && bytes.isEmpty, "a silent connection was closed (or sent \(bytes))")
            let json = #"{"state":{"n":1},"action":"first","imageData":""}"#
            try await socket.write([206] + withUnsafeBytes(of: Int32(json.utf8.count).littleEndian, Array.init) + Array(json.utf8))
            #expect(try await inbox.take().first == ByteBuffer(string: json))
        }
    }

    @Test("a connection in the original framing is an ordinary peer above its pipeline: frames in as messages, replies out in its framing")
    func originalFraming() async throws {
        try await withServer { server, logs in
            let inbox = Inbox<(ByteBuffer, Peer)>()
            server.receiveRaw(typeName: VerbatimTranslator.inbound) { message, peer in inbox.put((message.payload, peer)) }
            let json = #"{"state":{"count":1.25,"名前":"ü"},"action":"increment","imageData":"iVBORw0KGgo="}"#
            let socket = try await RawConnection.open(port: server.listeningPort!)
            // A frame the translator cannot read is dropped with a log line; the connection and the next frame live.
            try await socket.write([206, 1, 0, 0, 0, VerbatimTranslator.untranslatable])
            try await socket.write([206] + withUnsafeBytes(of: Int32(json.utf8.count).littleEndian, Array.init) + Array(json.utf8))
            let (payload, peer) = try #require(try await inbox.take().first)
            #expect(payload == ByteBuffer(string: json))
            #expect(peer.capabilities == [OriginalFraming.capability] && peer.accepts == [VerbatimTranslator.outbound])
            #expect(!logs.records(mentioning: "starts with \"!\"").isEmpty)

            // A request the app cannot receive is answered at once, without reaching it.
            await #expect(throws: TransceiverError.self) {
                try await server.requestRaw(typeName: "test.Other", payload: ByteBuffer(string: "{}"), from: peer.id, timeout: .seconds(30))
            }
            let state = #"{"count":1.25,"名前":"ü"}"#
            try await server.sendRaw(typeName: VerbatimTranslator.outbound, payload: ByteBuffer(string: state), to: peer.id)
            let (bytes, _) = try await socket.bytes(timeout: .seconds(2))
            // Nothing but the 206 frame reaches the app: no hello, no ping, nothing of the refused request.
            #expect(bytes == [206] + withUnsafeBytes(of: Int32(state.utf8.count).littleEndian, Array.init) + Array(state.utf8))
        }
    }
}
