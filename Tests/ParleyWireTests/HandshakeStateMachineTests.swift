import Foundation
import NIOCore
import ParleyWire
import Testing

@Suite("Handshake state machine")
struct HandshakeStateMachineTests {
    static let peerID = "6f1c7a52-93c4-4d0e-9a7d-0b7f6f1f0a11"

    static func hello(min: UInt16 = 1, max: UInt16 = 1, json: String? = nil) -> Frame {
        let body = json ?? #"{"peerID":"\#(peerID)","name":"b","capabilities":["heartbeat"],"accepts":[]}"#
        return .hello(HelloFrame(minimumVersion: min, maximumVersion: max, body: ByteBuffer(string: body)))
    }

    @Test("the dialer speaks first; the acceptor answers only after the dialer's hello")
    func roles() {
        var dialer = HandshakeStateMachine(role: .dialer)
        #expect(dialer.start() == .sendHello)
        var acceptor = HandshakeStateMachine(role: .acceptor)
        #expect(acceptor.start() == nil)
        guard case .established(.parley(let version, let hello), let sendHello) = acceptor.receive(Self.hello()) else {
            Issue.record("acceptor did not establish")
            return
        }
        #expect(version == 1 && sendHello && hello.name == "b" && hello.capabilities == ["heartbeat"])
        guard case .established(_, let dialerSends) = dialer.receive(Self.hello()) else {
            Issue.record("dialer did not establish")
            return
        }
        #expect(!dialerSends)
    }

    @Test("the highest common version is chosen")
    func negotiation() {
        var machine = HandshakeStateMachine(role: .acceptor, minimumVersion: 1, maximumVersion: 3)
        _ = machine.start()
        guard case .established(.parley(let version, _), _) = machine.receive(Self.hello(min: 2, max: 5)) else {
            Issue.record("no agreement")
            return
        }
        #expect(version == 3)
    }

    @Test("incompatible versions fail with a message naming both ranges, and the peer is told")
    func incompatible() {
        var machine = HandshakeStateMachine(role: .acceptor)
        _ = machine.start()
        guard case .fail(let error, let notify) = machine.receive(Self.hello(min: 7, max: 9)) else {
            Issue.record("accepted an incompatible version")
            return
        }
        #expect(notify)
        #expect(error.closeCode == .incompatibleVersion)
        #expect(error.description.contains("version 1") && error.description.contains("versions 7–9"))
    }

    @Test("a hello whose JSON is invalid or lacks a UUID peer id fails", arguments: [
        "{not json", #"{"peerID":"not-a-uuid","name":"x","capabilities":[],"accepts":[]}"#, #"{"name":"x"}"#,
    ])
    func malformedHello(json: String) {
        var machine = HandshakeStateMachine(role: .acceptor)
        _ = machine.start()
        guard case .fail(.malformedHello, true) = machine.receive(Self.hello(json: json)) else {
            Issue.record("accepted a malformed hello")
            return
        }
    }

    @Test("an acceptor treats a first 206 frame as a legacy debugger app and sends it nothing")
    func legacy() {
        var machine = HandshakeStateMachine(role: .acceptor)
        _ = machine.start()
        let json = ByteBuffer(string: #"{"action":"x"}"#)
        #expect(machine.receive(.legacyDebugger(json)) == .established(.legacyDebugger(firstFrame: json), sendHello: false))
    }

    @Test("a dialer refuses a legacy frame, and anything but hello first is a violation")
    func unexpected() {
        var dialer = HandshakeStateMachine(role: .dialer)
        _ = dialer.start()
        #expect(dialer.receive(.legacyDebugger(ByteBuffer())) == .fail(.unexpectedFrame("legacy debugger frame"), notifyPeer: true))
        var acceptor = HandshakeStateMachine(role: .acceptor)
        _ = acceptor.start()
        #expect(acceptor.receive(.ping(1)) == .fail(.unexpectedFrame("ping"), notifyPeer: true))
    }

    @Test("a close frame during the handshake is the peer's refusal, not answered")
    func refused() {
        var dialer = HandshakeStateMachine(role: .dialer)
        _ = dialer.start()
        let close = CloseFrame(code: .incompatibleVersion, message: "upgrade")
        #expect(dialer.receive(.close(close)) == .fail(.refusedByPeer(code: .incompatibleVersion, message: "upgrade"), notifyPeer: false))
    }
}
