import Foundation
@testable import ParleyDaemon
import ParleyTestSupport
import Testing

/// `listenHost`: the one address of this host that LAN peers reach parleyd on.
@Suite("parleyd listenHost")
struct ListenHostTests {
    func load(flags: [String] = [], environment: [String: String] = [:]) throws -> DaemonConfiguration {
        let scratch = try ScratchDirectory(prefix: "parleyd-listen")
        let options = try CommandLineOptions.parse(flags + ["--config", try scratch.write("parleyd.json", "{}")])
        return try ConfigurationLoader(options: options, environment: environment).load()
    }

    @Test("every address (::) by default; a numeric IPv4 or IPv6 address from a flag or the environment reaches the transceiver")
    func values() throws {
        #expect(try load().transceiverConfiguration(logger: .init(label: "test")).listenHost == "::")
        #expect(try load(flags: ["--listen-host", "127.0.0.1"]).transceiverConfiguration(logger: .init(label: "test")).listenHost == "127.0.0.1")
        #expect(try load(environment: ["PARLEY_LISTEN_HOST": "::1"]).listenHost == "::1")
    }

    @Test("a name or a malformed address is a configuration error naming the key and what it accepts")
    func refusesNames() throws {
        for given in ["localhost", "192.168.1", "eth0", ""] {
            #expect {
                try load(flags: ["--listen-host", given])
            } throws: { error in
                guard case ConfigurationError.invalidValue(key: .listenHost, _, _) = error else { return false }
                return "\(error)".contains("not a name")
            }
        }
    }

    @Test("parleyd with listenHost 127.0.0.2 accepts peers there and refuses them on 127.0.0.1")
    func listensOnTheAddressOnly() async throws {
        let daemon = try await ParleydProcess.start(arguments: ["--listen-host", "127.0.0.2"])
        let accepted = try await RawConnection.open(port: daemon.port, host: "127.0.0.2")
        accepted.close()
        await #expect(throws: (any Error).self) { _ = try await RawConnection.open(port: daemon.port, host: "127.0.0.1") }
        // The control socket does not depend on it.
        #expect(try await daemon.ctl(["status"]).status == 0)
        #expect(try await daemon.stop() == 0)
    }
}
