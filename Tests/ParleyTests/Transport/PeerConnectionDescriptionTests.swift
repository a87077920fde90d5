import Foundation
import Logging
import NIOCore
import NIOEmbedded
import NIOPosix
@testable import Parley
import ParleyTestSupport
import ParleyWire
import Synchronization
import Testing

@Suite("How a peer connection writes its address")
struct PeerConnectionDescriptionTests {
    @Test("addresses print as people write them: IPv4 without ::ffff:, link-local IPv6 with its interface")
    func addresses() throws {
        #expect(PeerConnection.describe(try SocketAddress(ipAddress: "::ffff:10.0.0.2", port: 7206)) == "10.0.0.2:7206")
        #expect(PeerConnection.describe(try SocketAddress(ipAddress: "10.0.0.2", port: 7206)) == "10.0.0.2:7206")
        #expect(PeerConnection.describe(try SocketAddress(ipAddress: "2001:db8::1", port: 7206)) == "[2001:db8::1]:7206")
        var linkLocal = sockaddr_in6()
        linkLocal.sin6_family = sa_family_t(AF_INET6)
        linkLocal.sin6_port = UInt16(7206).bigEndian
        #expect(inet_pton(AF_INET6, "fe80::1", &linkLocal.sin6_addr) == 1)
        linkLocal.sin6_scope_id = if_nametoindex("lo")
        #expect(PeerConnection.describe(SocketAddress(linkLocal, host: "")) == "[fe80::1%lo]:7206")
    }
}
