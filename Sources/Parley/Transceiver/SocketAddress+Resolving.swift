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

extension ClientBootstrap {
    /// Connects to `endpoint`: an address directly, with no lookup at all (see ``kernelNetworkCall(_:)`` for why
    /// lookups are avoided); a name through NIO's resolver, which looks up on a queue of its own and tries the
    /// addresses found Happy-Eyeballs style. `@concurrent`: the bootstrap is not Sendable, so it may not be handed
    /// from the caller's executor to NIO's connect.
    @concurrent
    public func connect<Output: Sendable>(
        to endpoint: Endpoint, channelInitializer: @escaping @Sendable (any Channel) -> EventLoopFuture<Output>
    ) async throws -> Output {
        if let numeric = try? SocketAddress(ipAddress: endpoint.host, port: endpoint.port) {
            return try await connect(to: numeric, channelInitializer: channelInitializer)
        }
        return try await connect(host: endpoint.host, port: endpoint.port, channelInitializer: channelInitializer)
    }
}
