import Foundation
import Testing
import ParleyTestSupport

/// The interface filter where parleyd accepts connections, so that a denied network cannot reach it: a connection that
/// arrives on a denied interface is closed at accept (ListenInterfaceGate), before a byte of it is read. Loopback is
/// always accepted, so this needs a second host: parleyd on A denies A's veth, and B connects to A's address on it.
@Suite("The listen interface filter in a two-host lab", .serialized, .timeLimit(.minutes(3)))
struct ListenInterfaceLabTests {
    typealias Daemon = DaemonLabTests

    /// Connects to $0:$1, sends a line that is no Parley frame and prints, in hex, every byte that comes back until
    /// the connection ends. Exit 9: it could not connect at all.
    static let client = #"""
        exec 3<>"/dev/tcp/$0/$1" || exit 9
        printf 'not parley\n' >&3
        od -An -tx1 -v <&3
        """#

    @Test("a connection arriving on a denied interface is closed unanswered and unread; the same bytes on loopback are read and refused with a close frame")
    func deniedInterfaceIsClosedAtAccept() async throws {
        // IPv4 only: B reaches A at one address, on the one interface A denies.
        try await NetnsLab.with(.init(ipv4Only: true)) { lab in
            let denied = lab.interface(.a)
            let a = try await Daemon.parleyd(lab, .a, ["--interface-deny", denied], logLevel: "debug")
            // Its only interface besides loopback denied, A has nowhere to advertise; it still reports ready as soon
            // as avahi-daemon answers, without waiting out the 10 s allowed for an advertisement.
            // The line may follow "parleyd ready" (which says "not advertising"): waited for, not looked up.
            try await a.waitForLog("not advertising: no usable network interface is up")
            #expect(!a.stderr.contains("has not answered within"), "\(a.stderr)")
            let port = try #require(ParleydReadiness.find(in: a.stdout), "\(a.stdout)").port
            let (addressOfA, addressOfB) = (try await lab.ipv4(.a), try await lab.ipv4(.b))
            let gate = "connection on an excluded interface closed"
            let refused = "handshake failed"

            let fromB = try await Daemon.run(lab, .b, ["bash", "-c", Self.client, addressOfA, String(port)], timeout: .seconds(15))
            try await a.waitForLog(gate)
            print("ListenInterfaceLabTests: from B through \(denied): \(fromB)")
            // TCP itself was accepted (the kernel completes the handshake), so the gate is what closed it: od ends
            // at the close (a reset, when the line was still unread in the socket) with not one byte received.
            #expect(fromB.status == 0 || fromB.status == 1, "\(fromB)")
            #expect(fromB.stdout.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, "A answered a connection on a denied interface: \(fromB)")
            let gateLines = a.stderr.split(separator: "\n").filter { $0.contains(gate) }
            #expect(gateLines.count == 1, "\(gateLines)")
            #expect(gateLines.first?.contains("interface=\(denied)") == true, "\(gateLines)")
            #expect(gateLines.first?.contains("from=\(addressOfB):") == true, "\(gateLines)")
            // Reading the line would have refused it as no Parley frame, as the loopback connection below shows.
            #expect(!a.stderr.contains(refused), "A read the connection from B: \(a.stderr)")

            // The same bytes on loopback, which the filter always admits: parleyd reads them and says why it refuses
            // them, in a close frame (Parley's start byte 0xCF first).
            let local = try await Daemon.run(lab, .a, ["bash", "-c", Self.client, "127.0.0.1", String(port)], timeout: .seconds(15))
            print("ListenInterfaceLabTests: from A over loopback: \(local)")
            #expect(local.stdout.split(whereSeparator: \.isWhitespace).first == "cf", "\(local)")
            try await a.waitForLog(refused)
            #expect(a.stderr.split(separator: "\n").filter { $0.contains(gate) }.count == 1, "\(a.stderr)")
            #expect(a.isRunning, "\(a.stderr)")
        }
    }
}
