import Foundation
@testable import ParleyDaemon
import Testing

/// The web debugger's keys as parleyd loads them: the default, `off`, any free port, and the rule that an address
/// beyond loopback needs a token file (issue #12).
@Suite("parleyd web debugger configuration")
struct WebConfigurationTests {
    func load(flags: [String], files: (String) throws -> Void = { _ in }) throws -> DaemonConfiguration {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("parleyd-web-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try files(directory.path)
        try Data("{}".utf8).write(to: directory.appendingPathComponent("parleyd.json"))
        let options = try CommandLineOptions.parse(flags.map { $0.replacingOccurrences(of: "DIR", with: directory.path) }
            + ["--config", directory.appendingPathComponent("parleyd.json").path])
        return try ConfigurationLoader(options: options, environment: [:]).load()
    }

    @Test("127.0.0.1:7207 by default; off turns it off; port 0 is any free port")
    func listen() throws {
        #expect(try load(flags: []).webListen?.description == "127.0.0.1:7207")
        #expect(try load(flags: ["--web-listen", "off"]).webListen == nil)
        #expect(try load(flags: ["--web-listen", "[::1]:0"]).webListen?.port == 0)
    }

    @Test("beyond loopback without a token parleyd refuses to start, naming webTokenFile; with an owner-only token file it starts")
    func tokenBeyondLoopback() throws {
        do {
            _ = try load(flags: ["--web-listen", "0.0.0.0:7207"])
            Issue.record("0.0.0.0 without a token was accepted")
        } catch let error as ConfigurationError {
            #expect("\(error)".contains("webTokenFile"), "\(error)")
        }
        let token = String(repeating: "ab", count: 32)
        let configuration = try load(flags: ["--web-listen", "0.0.0.0:7207", "--web-token-file", "DIR/token"]) { directory in
            let path = directory + "/token"
            try Data((token + "\n").utf8).write(to: URL(fileURLWithPath: path))
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        }
        #expect(configuration.webToken == token)
    }
}
