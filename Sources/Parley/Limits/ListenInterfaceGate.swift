import Logging
import NIOCore
import ParleyDiscovery

/// Refuses, at accept, a connection that arrived on an interface the listen filter excludes (a container bridge,
/// a VPN tunnel): it is closed before a byte of it is read or answered, as if nothing listened there. The
/// interface is the one that holds the connection's local address, in the network monitor's latest snapshot.
struct ListenInterfaceGate: Sendable {
    let filter: InterfaceFilter
    let network: NetworkMonitor
    let logger: Logger

    func admits(_ channel: any Channel) -> Bool {
        guard let local = channel.localAddress, let host = local.plainIPAddress else { return true }
        let snapshot = network.current
        // An address the last snapshot does not know was added an instant ago: read the interfaces again.
        guard let interface = snapshot.interface(holding: host) ?? NetworkSnapshot.current().interface(holding: host)
        else { return true }
        if filter.admitsListening(on: interface.name, isLoopback: interface.isLoopback) { return true }
        logger.debug(
            "connection on an excluded interface closed",
            metadata: [
                "interface": "\(interface.name)",
                "from": "\(channel.remoteAddress.map(PeerConnection.describe) ?? "?")",
            ])
        return false
    }
}
