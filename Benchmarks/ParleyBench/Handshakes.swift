import Foundation
import Parley

/// What a new connection costs with each way of authenticating: TCP, then (with a secret) the proofs or (with
/// devices) TLS 1.3 with both certificates, then the hellos, until the dialler's `connect` returns. Two nodes in
/// this process over loopback, one connection at a time, each from a new dialler (an ephemeral peer id, so that
/// none is a duplicate of the one before); only `connect` is timed.
func handshakeFigures(count: Int, report: inout Report) async throws {
    let serverIdentity = try DeviceIdentity.generate(name: "bench-server")
    let clientIdentity = try DeviceIdentity.generate(name: "bench-client")
    let secret = SharedSecret.generate()
    let modes: [(name: String, label: String, adjust: @Sendable (inout TransceiverConfiguration, Bool) -> Void)] = [
        ("handshake_open", "open (no authentication)", { _, _ in }),
        ("handshake_secret", "shared secret (proofs, then sealed)", { configuration, _ in configuration.sharedSecret = secret }),
        ("handshake_devices", "devices (TLS 1.3, both certificates)", { configuration, isServer in
            configuration.devices = isServer
                ? DeviceAuthentication(identity: serverIdentity, trusting: [clientIdentity.fingerprint])
                : DeviceAuthentication(identity: clientIdentity, trusting: [serverIdentity.fingerprint])
        }),
    ]
    for mode in modes {
        var serverConfiguration = configuration("bench-server", listen: true, secret: nil)
        mode.adjust(&serverConfiguration, true)
        let server = Transceiver(configuration: serverConfiguration)
        try await server.start()
        let endpoint = Endpoint(host: "127.0.0.1", port: server.listeningPort!)
        var timed: [Double] = []
        timed.reserveCapacity(count)
        for _ in 0..<count {
            var clientConfiguration = configuration("bench-client", listen: false, secret: nil)
            mode.adjust(&clientConfiguration, false)
            let client = Transceiver(configuration: clientConfiguration)
            try await client.start()
            let started = ContinuousClock.now
            _ = try await client.connect(to: endpoint)
            timed.append(seconds(ContinuousClock.now - started) * 1e6)
            await client.stop()
        }
        await server.stop()
        let rate = Double(count) / (timed.reduce(0, +) / 1e6)
        report.record(mode.name, rate, unit: "conns/s", line: "connections, \(mode.label):".padding(toLength: 52, withPad: " ", startingAt: 0) + "\(format(rate)) /s")
        timed.sort()
        report.recordLatency(mode.name + "_latency", timed, label: "  connect until the handshake is done: ")
    }
}
