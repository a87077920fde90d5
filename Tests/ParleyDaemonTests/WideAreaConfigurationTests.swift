import Foundation
import ParleyDiscovery
@testable import ParleyDaemon
import Testing

/// The wide-area and interface keys of issue #16 in parleyd's configuration.
@Suite("parleyd wide-area and interface configuration")
struct WideAreaConfigurationTests {
    func load(file: String = "{}", environment: [String: String] = [:], flags: [String] = []) throws -> DaemonConfiguration {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("parleyd-wide-\(UUID().uuidString).json")
        try Data(file.utf8).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        let options = try CommandLineOptions.parse(flags + ["--config", url.path])
        return try ConfigurationLoader(options: options, environment: environment).load()
    }

    @Test("lists come from the file, the environment (comma-separated) and repeated flags, and reach discovery and the listener")
    func lists() throws {
        let file = try load(file: #"{"browseDomains": ["parley.test"], "interfacesAllow": ["eth*", "docker0"]}"#)
        #expect(file.browseDomains == ["parley.test"])
        #expect(file.interfaces.admits("docker0"), "named in the allow list")
        #expect(!file.interfaces.admits("wlan0"))
        let environment = try load(environment: ["PARLEY_BROWSE_DOMAINS": "a.example,b.example", "PARLEY_INTERFACES_DENY": "wl*"])
        #expect(environment.browseDomains == ["a.example", "b.example"])
        #expect(environment.interfaces.admits("docker0"), "an explicit deny list replaces the default one")
        #expect(!environment.interfaces.admits("wlan0"))
        let flags = try load(flags: ["--browse-domain", "x.example", "--interface-deny", "eth1", "--interface-deny", "eth2"])
        #expect(flags.browseDomains == ["x.example"])
        #expect(flags.interfaces.deny == ["eth1", "eth2"])
        let transceiver = flags.transceiverConfiguration(logger: .init(label: "test"))
        #expect(transceiver.discovery?.browseDomains == ["x.example"])
        #expect(transceiver.listenInterfaces == flags.interfaces)
        // The default skips virtual interfaces.
        #expect(!(try load()).interfaces.admits("docker0"))
    }

    @Test("bad domains and patterns are refused, naming the key")
    func badValues() throws {
        for (key, json) in [("browseDomains", #"["bad domain"]"#), ("browseDomains", #"["a..b"]"#), ("interfacesAllow", #"[""]"#), ("dnsUpdateTimeToLive", "0")] {
            #expect(throws: ConfigurationError.self, "\(key)=\(json)") { try load(file: #"{"\#(key)": \#(json)}"#) }
        }
    }

    @Test("a DNS UPDATE domain needs a readable key file: without one parleyd refuses to start, naming the key")
    func keyFileRequired() throws {
        do {
            _ = try load(file: #"{"dnsUpdateDomain": "parley.test"}"#)
            Issue.record("a domain without a key file was accepted")
        } catch let error as ConfigurationError {
            #expect(error.description.contains("dnsUpdateKeyFile"), "\(error)")
        }
        do {
            _ = try load(file: #"{"dnsUpdateDomain": "parley.test", "dnsUpdateKeyFile": "/nonexistent/parley.key"}"#)
            Issue.record("an unreadable key file was accepted")
        } catch let error as ConfigurationError {
            #expect(error.description.contains("/nonexistent/parley.key"), "\(error)")
            #expect(error.description.contains("cannot be read"), "\(error)")
        }
        let key = FileManager.default.temporaryDirectory.appendingPathComponent("parley-\(UUID().uuidString).key")
        try Data("key \"k\" { algorithm hmac-sha256; secret \"AAAA\"; };\n".utf8).write(to: key)
        defer { try? FileManager.default.removeItem(at: key) }
        let configured = try load(file: #"{"dnsUpdateDomain": "parley.test", "dnsUpdateKeyFile": "\#(key.path)"}"#)
        #expect(configured.dnsUpdateDomain == "parley.test")
        #expect(configured.transceiverConfiguration(logger: .init(label: "test")).discovery?.backend.name.contains("dns-update(parley.test)") == true)
    }
}
