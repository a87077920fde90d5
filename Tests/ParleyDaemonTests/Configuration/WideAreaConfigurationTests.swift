import Foundation
import ParleyDiscovery
@testable import ParleyDaemon
import Testing

/// The wide-area DNS-SD and network interface keys in parleyd's configuration: what each layer may say, and what
/// reaches discovery and the listener.
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
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: key.path)
        defer { try? FileManager.default.removeItem(at: key) }
        let configured = try load(file: #"{"dnsUpdateDomain": "parley.test", "dnsUpdateKeyFile": "\#(key.path)"}"#)
        #expect(configured.dnsUpdateDomain == "parley.test")
        #expect(configured.transceiverConfiguration(logger: .init(label: "test")).discovery?.backend.name.contains("dns-update(parley.test)") == true)
    }

    @Test("a TSIG key file its group or others may read is refused, naming the key, the mode and the fix, as a secret file is", arguments: [0o644, 0o640, 0o604])
    func keyFileOwnerOnly(mode: Int) throws {
        let key = FileManager.default.temporaryDirectory.appendingPathComponent("parley-\(UUID().uuidString).key")
        try Data("key \"k\" { algorithm hmac-sha256; secret \"AAAA\"; };\n".utf8).write(to: key)
        defer { try? FileManager.default.removeItem(at: key) }
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: key.path)
        do {
            _ = try load(file: #"{"dnsUpdateDomain": "parley.test", "dnsUpdateKeyFile": "\#(key.path)"}"#)
            Issue.record("a key file with mode \(String(mode, radix: 8)) was accepted")
        } catch let error as ConfigurationError {
            let text = "\(error)"
            #expect(text.hasPrefix("bad value for dnsUpdateKeyFile: \(key.path)"), "\(text)")
            #expect(text.contains("has mode 0\(String(mode, radix: 8))") && text.contains("chmod 600 \(key.path)"), "\(text)")
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o400], ofItemAtPath: key.path)
        #expect(try load(file: #"{"dnsUpdateDomain": "parley.test", "dnsUpdateKeyFile": "\#(key.path)"}"#).dnsUpdateKeyFile == key.path)
    }

    @Test("dnsUpdateServer must be a host or an address with an optional port: a line break, which would add a line to nsupdate's script, is refused")
    func serverValidated() throws {
        for bad in ["10.0.0.1\nupdate add evil.parley.test. 30 A 10.6.6.6", "ns1 example", "ns1.example:99999"] {
            do {
                _ = try load(environment: ["PARLEY_DNS_UPDATE_SERVER": bad])
                Issue.record("\(bad.debugDescription) was accepted")
            } catch let error as ConfigurationError {
                #expect("\(error)".hasPrefix("bad value for dnsUpdateServer: "), "\(error)")
                #expect("\(error)".contains("[IPv6]:PORT"), "\(error)")
            }
        }
        for good in ["10.0.0.1", "10.0.0.1:5353", "ns1.example.org", "[fd00::53]:53"] {
            #expect(try load(environment: ["PARLEY_DNS_UPDATE_SERVER": good]).dnsUpdateServer == good)
        }
    }
}
