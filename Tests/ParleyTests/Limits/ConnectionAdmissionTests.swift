import Foundation
import Logging
import NIOEmbedded
import NIOCore
@testable import Parley
import ParleyTestSupport
import ParleyWire
import Synchronization
import Testing

@Suite("Connection admission")
struct ConnectionAdmissionTests {
    static func admission(pending: Int, perAddress: Int = 8) -> ConnectionAdmission {
        var configuration = TransceiverConfiguration(name: "test", identity: .ephemeral)
        configuration.maximumPendingConnections = pending
        configuration.maximumPendingConnectionsPerAddress = perAddress
        configuration.logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        return ConnectionAdmission(configuration: configuration, counters: StatisticsCounters(), logThrottle: LogThrottle(timers: EmbeddedEventLoop()))
    }

    static func channel(from address: String) throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.connect(to: SocketAddress(ipAddress: address, port: 40000)).wait()
        return channel
    }

    @Test("connections that have not completed a handshake have a pool of their own: a full pool makes room by closing the oldest silent one, and refuses only when all have spoken")
    func pendingPool() throws {
        let admission = Self.admission(pending: 2)
        let (a, b) = (try Self.channel(from: "10.0.0.1"), try Self.channel(from: "10.0.0.2"))
        #expect(try admission.admit(a)?.handshakeClockStartsAtAccept == false)
        #expect(try admission.admit(b)?.handshakeClockStartsAtAccept == true, "the pool is now full: under pressure")
        // Full, and nobody has been silent for a second: the newcomer is refused (a burst of peers connecting at
        // once has not had the time to speak).
        let early = try Self.channel(from: "10.0.0.6")
        #expect(try admission.admit(early) == nil)
        #expect(a.isActive && b.isActive)
        // A second later: the oldest silent one (a) is closed for the newcomer, whose clock starts at once (pressure).
        let c = try Self.channel(from: "10.0.0.3")
        c.embeddedEventLoop.advanceTime(by: .seconds(1))
        #expect(try admission.admit(c)?.handshakeClockStartsAtAccept == true)
        #expect(!a.isActive && b.isActive)
        a.embeddedEventLoop.run()
        #expect(admission.pendingCount == 2)
        // Both have spoken: nobody to make room with, so the next is refused.
        admission.spoke(b)
        admission.spoke(c)
        let d = try Self.channel(from: "10.0.0.4")
        #expect(try admission.admit(d) == nil)
        // A completed handshake leaves the pool: room again, and it never counted against its peers.
        admission.established(b)
        #expect(try admission.admit(try Self.channel(from: "10.0.0.5")) != nil)
        #expect(b.isActive)
    }

    @Test("the pending pool has a per-address limit")
    func pendingPerAddress() throws {
        let admission = Self.admission(pending: 10, perAddress: 2)
        #expect(try admission.admit(try Self.channel(from: "10.0.0.9")) != nil)
        #expect(try admission.admit(try Self.channel(from: "10.0.0.9")) != nil)
        #expect(try admission.admit(try Self.channel(from: "10.0.0.9")) == nil)
        #expect(try admission.admit(try Self.channel(from: "10.0.0.8")) != nil)
    }

    @Test("an IPv4 peer seen through a dual-stack listener is counted under its plain IPv4 address")
    func addressKey() throws {
        #expect(ConnectionAdmission.addressKey(try SocketAddress(ipAddress: "::ffff:192.168.1.20", port: 7206)) == "192.168.1.20")
        #expect(ConnectionAdmission.addressKey(try SocketAddress(ipAddress: "192.168.1.20", port: 1)) == "192.168.1.20")
        #expect(ConnectionAdmission.addressKey(try SocketAddress(ipAddress: "fe80::1", port: 1)) == "fe80::1")
        #expect(ConnectionAdmission.addressKey(try SocketAddress(unixDomainSocketPath: "/tmp/x.sock")) == nil)
    }
}
