import NIOCore
import NIOPosix

/// The bootstraps every connection of a transceiver is made with, in one place: NIO's socket bootstraps, which
/// work only on a group of socket event loops. Any other group (an `EmbeddedEventLoop`, Network.framework's loops)
/// is refused with ``TransceiverError/unsupportedEventLoopGroup(_:)`` instead of NIO's precondition failure.
enum SocketBootstraps {
    static func server(_ group: any EventLoopGroup) throws(TransceiverError) -> ServerBootstrap {
        guard let bootstrap = ServerBootstrap(validatingGroup: group) else { throw unsupported(group) }
        return bootstrap
    }

    static func client(_ group: any EventLoopGroup) throws(TransceiverError) -> ClientBootstrap {
        guard let bootstrap = ClientBootstrap(validatingGroup: group) else { throw unsupported(group) }
        return bootstrap
    }

    /// Throws unless `group` can run the bootstraps: what `run()` checks first.
    static func check(_ group: any EventLoopGroup) throws(TransceiverError) {
        _ = try client(group)
    }

    private static func unsupported(_ group: any EventLoopGroup) -> TransceiverError {
        .unsupportedEventLoopGroup(String(describing: type(of: group)))
    }
}
