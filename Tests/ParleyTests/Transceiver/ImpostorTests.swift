import Foundation
import NIOCore
@testable import Parley
import ParleyTestSupport
import ParleyWire
import Testing

/// Open mode lets anyone write any peer id in a hello. A claim must not take a connected peer's place.
@Suite("Impostors", .timeLimit(.minutes(1)))
struct ImpostorTests {
    struct Note: Codable, Sendable, Hashable, NamedMessage {
        static let messageType = "test.ImpostorNote"
        var text: String
    }

    @Test("a hello claiming a connected peer's id from another address is refused with peer-id-in-use; messages keep going to the real peer")
    func claimRefused() async throws {
        let server = makeTransceiver("server")
        let victimID = PeerID()
        let victim = makeTransceiver("victim", listen: nil) { $0.identity = .fixed(victimID) }
        let received = Inbox<Note>()
        victim.receive(Note.self) { note, _ in received.put(note) }
        try await withRunning([server, victim]) {
            let connected = try await victim.connect(to: server.loopbackEndpoint)
            let seen = try await server.waitForPeer(timeout: .seconds(10), description: "the victim") { $0.id == victimID }

            // 127.0.0.2: another host on the loopback network.
            let impostor = try await RawConnection.open(port: server.listeningPort!, from: "127.0.0.2")
            try await impostor.write(rawHello(json: #"{"peerID":"\#(victimID.rawValue)","name":"impostor","capabilities":[],"accepts":["test.ImpostorNote"]}"#))
            let (frames, closed) = try await impostor.frames()
            let close = frames.compactMap { if case .close(let close) = $0 { close } else { nil } }.first
            #expect(closed && close?.code == .peerIDInUse, "\(frames)")
            #expect(close?.message.contains("already connected from 127.0.0.1") == true, "\(String(describing: close))")

            #expect(server.peers.map(\.name) == ["victim"])
            #expect(server.peers.first?.connectionID == seen.connectionID, "the victim's connection is still the one")
            #expect(connected.name == "server")
            try await server.send(Note(text: "for the victim"), to: victimID)
            #expect(try await received.take().map(\.text) == ["for the victim"])
        }
    }

    @Test("a value sent to a peer's connection does not reach a later connection with the same id")
    func toConnectionOf() async throws {
        let server = makeTransceiver("server")
        let id = PeerID()
        let first = makeTransceiver("first", listen: nil) { $0.identity = .fixed(id) }
        try await withRunning([server, first]) {
            _ = try await first.connect(to: server.loopbackEndpoint)
            let old = try await server.waitForPeer(timeout: .seconds(10), description: "first") { $0.id == id }
            await first.stop()
            let second = makeTransceiver("second", listen: nil) { $0.identity = .fixed(id) }
            try await withRunning([second]) {
                _ = try await second.connect(to: server.loopbackEndpoint)
                let new = try await server.waitForPeer(timeout: .seconds(10), description: "second") { $0.id == id && $0.connectionID != old.connectionID }
                await #expect(throws: TransceiverError.self) {
                    try await server.sendRaw(typeName: Note.messageType, payload: ByteBuffer(string: #"{"text":"x"}"#), toConnectionOf: old)
                }
                try await server.sendRaw(typeName: Note.messageType, payload: ByteBuffer(string: #"{"text":"x"}"#), toConnectionOf: new)
            }
        }
    }
}
