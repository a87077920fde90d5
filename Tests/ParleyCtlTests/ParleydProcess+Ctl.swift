import Parley
import ParleyTestSupport

extension ParleydProcess {
    /// parleyd on loopback for parleyctl's tests (see ``start(name:arguments:config:environment:in:executable:readyTimeout:)``),
    /// with the app listening at 127.0.0.1:`staticPeer` as its static peer if given.
    static func start(
        staticPeer: Int?, arguments: [String] = [], config: String = "{}", in directory: ScratchDirectory? = nil
    ) async throws -> ParleydProcess {
        try await start(arguments: (staticPeer.map { ["--static-peer", "127.0.0.1:\($0)"] } ?? []) + arguments, config: config, in: directory)
    }

    /// A running local client connected to parleyd's control socket, and parleyd as its peer.
    func localClient() async throws -> (client: Transceiver, parleyd: Peer) {
        let client = localTransceiver("client")
        try await client.start()
        return (client, try await client.connect(toUnixSocket: controlSocket))
    }
}

/// A transceiver of the tests' own: ephemeral id, not listening.
func localTransceiver(_ name: String) -> Transceiver {
    Transceiver(configuration: TransceiverConfiguration(name: name, identity: .ephemeral, listenHost: nil, port: 0))
}
