import Foundation
import NIOCore
import NIOPosix
#if canImport(Network)
import NIOTransportServices
#endif

/// Every listener and connection Parley makes, bootstrapped in one place from the event loop group it is to run
/// on: NIO's socket bootstraps for a group of socket loops (`MultiThreadedEventLoopGroup`, on every platform), and
/// on Apple platforms NIOTransportServices' for a `NIOTSEventLoopGroup` (Network.framework). Any other group (an
/// `EmbeddedEventLoop`, a testing loop) is refused with ``TransceiverError/unsupportedEventLoopGroup(_:)`` instead
/// of the bootstraps' precondition failure.
///
/// Callers say what they want (listen here, connect there, with this timeout) rather than get a bootstrap back,
/// for two reasons. The two families share no protocol with the async `bind`/`connect` that hand back an
/// `NIOAsyncChannel` (`NIOClientTCPBootstrapProtocol` has only the future-based connect), so a bootstrap handed
/// out would be an enum every caller switches on. And their options differ: a Network.framework listener traps on
/// `.backlog` and its connections refuse `SO_SNDBUF`, while a socket has no "wait for a path" to turn off. Here
/// each family gets what it understands; no caller needs to know which one it got.
package enum TransportBootstraps {
    /// Throws unless connections can be made on `group`: what `run()` checks first.
    package static func check(_ group: any EventLoopGroup) throws(TransceiverError) {
        _ = try client(for: group)
    }

    /// A TCP listener on `address`, its accepted connections as `childChannelInitializer` makes them. Address reuse
    /// (a restarted node gets its port back while old connections linger in TIME_WAIT), Nagle off and remote
    /// half-closure allowed on accepted connections.
    ///
    /// `@concurrent`, as every function here: the bootstraps are not Sendable, so they are made and used on one
    /// executor, never handed from the caller's to NIO's.
    @concurrent
    package static func listen<Output: Sendable>(
        on group: any EventLoopGroup, at address: SocketAddress,
        childChannelInitializer: @escaping @Sendable (any Channel) -> EventLoopFuture<Output>
    ) async throws -> NIOAsyncChannel<Output, Never> {
        switch try server(for: group) {
        case .sockets(let bootstrap):
            return try await bootstrap
                .serverChannelOption(.backlog, value: 256)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
                .childChannelOption(.allowRemoteHalfClosure, value: true)
                .bind(to: address, childChannelInitializer: childChannelInitializer)
        #if canImport(Network)
        case .networkFramework(let bootstrap):
            // No backlog (NWListener has none to set; the option is a fatal error there). Nagle is off on
            // NIOTransportServices' connections by default.
            return try await bootstrap
                .serverChannelOption(NIOTSChannelOptions.allowLocalEndpointReuse, value: true)
                .childChannelOption(.allowRemoteHalfClosure, value: true)
                .bind(to: address, childChannelInitializer: childChannelInitializer)
        #endif
        }
    }

    /// A listener on the Unix domain socket at `path`, replacing a socket file left there (the caller has made sure
    /// nobody answers on it: ``ControlSocketGuard``). Remote half-closure allowed on accepted connections.
    @concurrent
    package static func listen<Output: Sendable>(
        on group: any EventLoopGroup, unixDomainSocketPath path: String,
        childChannelInitializer: @escaping @Sendable (any Channel) -> EventLoopFuture<Output>
    ) async throws -> NIOAsyncChannel<Output, Never> {
        switch try server(for: group) {
        case .sockets(let bootstrap):
            return try await bootstrap
                .childChannelOption(.allowRemoteHalfClosure, value: true)
                .bind(unixDomainSocketPath: path, cleanupExistingSocketFile: true, childChannelInitializer: childChannelInitializer)
        #if canImport(Network)
        case .networkFramework(let bootstrap):
            // NIOTransportServices binds a Unix socket only through its address, and has no clean-up of its own.
            var info = stat()
            if lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFSOCK { unlink(path) }
            return try await bootstrap
                .childChannelOption(.allowRemoteHalfClosure, value: true)
                .bind(to: try SocketAddress(unixDomainSocketPath: path), childChannelInitializer: childChannelInitializer)
        #endif
        }
    }

    /// A TCP connection to `endpoint`, made by `channelInitializer`; Nagle off.
    ///
    /// On sockets an address is connected to directly, with no lookup at all (see ``kernelNetworkCall(_:)`` for
    /// why lookups are avoided), and a name through NIO's resolver, which looks up on a queue of its own and tries
    /// the addresses found Happy-Eyeballs style. Network.framework gets the text either way: it resolves without
    /// blocking anyone, races the addresses itself, and keeps the scope of a link-local address (`fe80::1%en0`),
    /// which its conversion from a `SocketAddress` drops.
    @concurrent
    package static func connect<Output: Sendable>(
        on group: any EventLoopGroup, to endpoint: Endpoint, timeout: TimeAmount, allowsRemoteHalfClosure: Bool,
        channelInitializer: @escaping @Sendable (any Channel) -> EventLoopFuture<Output>
    ) async throws -> Output {
        switch try client(for: group) {
        case .sockets(let bootstrap):
            let configured = bootstrap
                .connectTimeout(timeout)
                .channelOption(.tcpOption(.tcp_nodelay), value: 1)
                .channelOption(.allowRemoteHalfClosure, value: allowsRemoteHalfClosure)
            if let numeric = try? SocketAddress(ipAddress: endpoint.host, port: endpoint.port) {
                return try await configured.connect(to: numeric, channelInitializer: channelInitializer)
            }
            return try await configured.connect(host: endpoint.host, port: endpoint.port, channelInitializer: channelInitializer)
        #if canImport(Network)
        case .networkFramework(let bootstrap):
            return try await bootstrap
                .connectTimeout(timeout)
                // Fail at once where a socket would (refused, no route) instead of waiting out the timeout for a
                // better path: the callers redial with backoff of their own.
                .channelOption(NIOTSChannelOptions.waitForActivity, value: false)
                .channelOption(.allowRemoteHalfClosure, value: allowsRemoteHalfClosure)
                .connect(host: endpoint.host, port: endpoint.port, channelInitializer: channelInitializer)
        #endif
        }
    }

    /// A connection to the Unix domain socket at `path`, made by `channelInitializer`; remote half-closure allowed.
    /// `sendBufferSize` is asked of the kernel where the connection is a socket (`SO_SNDBUF`); Network.framework
    /// has no such setting and sizes its buffers itself.
    @concurrent
    package static func connect<Output: Sendable>(
        on group: any EventLoopGroup, unixDomainSocketPath path: String, sendBufferSize: Int?,
        channelInitializer: @escaping @Sendable (any Channel) -> EventLoopFuture<Output>
    ) async throws -> Output {
        switch try client(for: group) {
        case .sockets(let bootstrap):
            var configured = bootstrap.channelOption(.allowRemoteHalfClosure, value: true)
            if let sendBufferSize { configured = configured.channelOption(.socketOption(.so_sndbuf), value: sendBufferSize) }
            return try await configured.connect(unixDomainSocketPath: path, channelInitializer: channelInitializer)
        #if canImport(Network)
        case .networkFramework(let bootstrap):
            return try await bootstrap
                .channelOption(NIOTSChannelOptions.waitForActivity, value: false)
                .channelOption(.allowRemoteHalfClosure, value: true)
                .connect(unixDomainSocketPath: path, channelInitializer: channelInitializer)
        #endif
        }
    }

    // MARK: - Choosing the family

    private enum Server {
        case sockets(ServerBootstrap)
        #if canImport(Network)
        case networkFramework(NIOTSListenerBootstrap)
        #endif
    }

    private enum Client {
        case sockets(ClientBootstrap)
        #if canImport(Network)
        case networkFramework(NIOTSConnectionBootstrap)
        #endif
    }

    private static func server(for group: any EventLoopGroup) throws(TransceiverError) -> Server {
        if let bootstrap = ServerBootstrap(validatingGroup: group) { return .sockets(bootstrap) }
        #if canImport(Network)
        if let bootstrap = NIOTSListenerBootstrap(validatingGroup: group) { return .networkFramework(bootstrap) }
        #endif
        throw unsupported(group)
    }

    private static func client(for group: any EventLoopGroup) throws(TransceiverError) -> Client {
        if let bootstrap = ClientBootstrap(validatingGroup: group) { return .sockets(bootstrap) }
        #if canImport(Network)
        if let bootstrap = NIOTSConnectionBootstrap(validatingGroup: group) { return .networkFramework(bootstrap) }
        #endif
        throw unsupported(group)
    }

    private static func unsupported(_ group: any EventLoopGroup) -> TransceiverError {
        .unsupportedEventLoopGroup(String(describing: type(of: group)))
    }
}
