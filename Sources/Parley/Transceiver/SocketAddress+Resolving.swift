import NIOCore
import NIOPosix
import ParleyDiscovery

extension SocketAddress {
    /// `host` and `port` as an address to bind: a numeric address is parsed on the spot, a name is looked up with
    /// `getaddrinfo` through ``kernelNetworkCall(_:)``, never on the calling task's thread (NIO's
    /// `bind(host:port:)` looks up on the caller's thread, even for `127.0.0.1`).
    static func resolving(_ host: String, port: Int) async throws -> SocketAddress {
        if let numeric = try? SocketAddress(ipAddress: host, port: port) { return numeric }
        return try await kernelNetworkCall { try SocketAddress.makeAddressResolvingHost(host, port: port) }
    }
}
