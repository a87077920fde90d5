import Foundation
import FuzzSupport
import NIOCore
import ParleyWire

/// Input: our lowest version (byte % 4), how many versions above it we speak (byte % 4), then a byte stream
/// decoded into frames. Each of the first four frames is fed to a fresh handshake in each role, as the first
/// frame a connection receives.
///
/// Properties: no crash; a dialer never accepts an original-debugger frame; an established Parley handshake
/// agrees on the highest common version and a peer id that is a UUID; only the acceptor answers with a hello;
/// a refusal sent to the peer carries a protocol close code and a reason of bounded size (it must not reflect
/// or log whatever the peer sent, at any length).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHandshake(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    var input = FuzzInput(data, count: count)
    let minimum = UInt16(input.byte() % 4)
    let maximum = minimum + UInt16(input.byte() % 4)
    let stream = decodeStream(input.rest(), maximumBodySize: 1 << 20)
    for frame in stream.frames.prefix(4) {
        for role in [ConnectionRole.dialer, .acceptor] {
            var machine = HandshakeStateMachine(role: role, minimumVersion: minimum, maximumVersion: maximum)
            let opening = machine.start()
            check(opening == (role == .dialer ? .sendHello : nil), "\(role) opened with \(String(describing: opening))")
            verify(machine.receive(frame), for: frame, role: role, ours: minimum...maximum)
        }
    }
    return 0
}

/// A reason text we send or log, built from what a peer sent, stays this small whatever the peer sent.
let maximumReasonBytes = 2048

func verify(_ action: HandshakeStateMachine.Action, for frame: Frame, role: ConnectionRole, ours: ClosedRange<UInt16>) {
    switch action {
    case .sendHello:
        check(false, "sendHello in answer to a frame")
    case .established(.parley(let version, let hello), let sendHello):
        guard case .hello(let helloFrame) = frame else { return check(false, "established by a \(frame)") }
        let upper = min(ours.upperBound, helloFrame.maximumVersion)
        check(version == upper && version >= max(ours.lowerBound, helloFrame.minimumVersion), "version \(version) for \(ours) and \(helloFrame.minimumVersion)...\(helloFrame.maximumVersion)")
        check(UUID(uuidString: hello.peerID) != nil, "established with peer id \(hello.peerID)")
        check(sendHello == (role == .acceptor), "\(role) sendHello \(sendHello)")
    case .established(.legacyDebugger(let json), let sendHello):
        check(role == .acceptor, "a dialer accepted an original-debugger frame")
        check(!sendHello, "a hello sent to an original-debugger app")
        check(frame == .legacyDebugger(json), "the first legacy frame was not delivered as received")
    case .fail(let error, let notifyPeer):
        if case .close = frame {
            check(!notifyPeer, "a close frame answered with a close frame")
        } else {
            check(notifyPeer, "refused \(frame) without telling the peer")
            check([.incompatibleVersion, .protocolViolation].contains(error.closeCode), "refused with \(error.closeCode)")
        }
        check(error.description.utf8.count <= maximumReasonBytes, "a \(error.description.utf8.count)-byte reason: \(error.description.prefix(200))…")
    }
}

@_cdecl("HandshakeFuzzer_main")
public func handshakeFuzzerMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runLibFuzzer(argc, argv, fuzzHandshake)
}
