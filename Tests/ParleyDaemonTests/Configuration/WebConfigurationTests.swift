import Foundation
import Parley
@testable import ParleyDaemon
import Testing

/// The web debugger's keys as parleyd loads them: the default, `off`, any free port, and the rule that an address
/// beyond loopback needs a token file, so that nobody on the network reads or changes anything without one.
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
            #expect("\(error)".contains("or give it an access token (webTokenFile; parleyctl secret generate --output FILE makes one)"), "\(error)")
        }
        let token = SharedSecret.generate().fileText.trimmingCharacters(in: .newlines)
        let configuration = try load(flags: ["--web-listen", "0.0.0.0:7207", "--web-token-file", "DIR/token"]) { directory in
            let path = directory + "/token"
            try Data((token + "\n").utf8).write(to: URL(fileURLWithPath: path))
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        }
        #expect(configuration.webToken == token)
    }

    /// `secret` written owner-only to `path`, as hex or as base64.
    static func write(_ secret: SharedSecret, to path: String, base64: Bool = false) throws {
        var text = secret.fileText
        if base64 {
            let hex = Array(text.trimmingCharacters(in: .newlines).utf8)
            let bytes = stride(from: 0, to: hex.count, by: 2).map { UInt8(String(decoding: hex[$0...$0 + 1], as: UTF8.self), radix: 16)! }
            text = Data(bytes).base64EncodedString() + "\n"
        }
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
    }

    @Test("a token holding the shared secret is refused, naming both keys: the token crosses the network in plain HTTP", arguments: [false, true])
    func tokenIsTheSecret(base64: Bool) throws {
        let secret = SharedSecret.generate()
        do {
            _ = try load(flags: ["--web-listen", "0.0.0.0:7207", "--web-token-file", "DIR/token", "--secret-file", "DIR/secret"]) { directory in
                try Self.write(secret, to: directory + "/secret")
                try Self.write(secret, to: directory + "/token", base64: base64)
            }
            Issue.record("the shared secret was accepted as the web token")
        } catch let error as ConfigurationError {
            let text = "\(error)"
            #expect(text.contains("webTokenFile") && text.contains("/token") && text.contains("secretFile") && text.contains("/secret"), "\(text)")
            #expect(text.contains("plain HTTP") && text.contains("parleyctl secret generate"), "\(text)")
        }
        let distinct = try load(flags: ["--web-listen", "0.0.0.0:7207", "--web-token-file", "DIR/token", "--secret-file", "DIR/secret"]) { directory in
            try Self.write(secret, to: directory + "/secret")
            try Self.write(.generate(), to: directory + "/token")
        }
        #expect(distinct.webToken != nil && distinct.sharedSecret != nil)
    }

    @Test("a token that is a pattern rather than random bytes is refused, naming webTokenFile")
    func patternToken() throws {
        do {
            _ = try load(flags: ["--web-listen", "0.0.0.0:7207", "--web-token-file", "DIR/token"]) { directory in
                try Data((String(repeating: "ab", count: 32) + "\n").utf8).write(to: URL(fileURLWithPath: directory + "/token"))
                try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: directory + "/token")
            }
            Issue.record("a token of one repeated byte was accepted")
        } catch let error as ConfigurationError {
            #expect("\(error)".hasPrefix("bad value for webTokenFile"), "\(error)")
            #expect("\(error)".contains("only 1 different value"), "\(error)")
        }
    }
}
