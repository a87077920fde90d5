import Foundation
import Testing

/// parleyd with a shared secret and discovery on, in the two-host lab: what it advertises, and who it connects to.
@Suite("Shared secret in a two-host lab", .serialized, .timeLimit(.minutes(3)))
struct SecretLabTests {
    static let secretFile = "\(DaemonLabTests.directory)/secret"

    /// Writes the same secret (64 hex digits, mode 0600) to `secretFile` on each of `hosts`.
    static func installSecret(_ lab: NetnsLab, on hosts: [NetnsLab.Host]) async throws {
        var generator = SystemRandomNumberGenerator()
        let hex = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
        for host in hosts {
            try await lab.exec(host, ["sh", "-c", "mkdir -p \(DaemonLabTests.directory) && umask 077 && echo \(hex) > \(secretFile)"])
        }
    }

    @Test("two parleyd with the same secret advertise auth=1, find each other and connect")
    func sameSecret() async throws {
        try await NetnsLab.with { lab in
            try await Self.installSecret(lab, on: [.a, .b])
            let a = try await DaemonLabTests.parleyd(lab, .a, ["--secret-file", Self.secretFile])
            let b = try await DaemonLabTests.parleyd(lab, .b, ["--secret-file", Self.secretFile])
            _ = try await DaemonLabTests.waitForPeer(lab, .b, "hosta", timeout: .seconds(15))
            let advertised = try await DaemonLabTests.browse(lab, .b, "hosta")
            #expect(!advertised.isEmpty && advertised.allSatisfy { $0.contains(#""auth=1""#) }, "\(advertised)")
            #expect(a.isRunning && b.isRunning, "a: \(a.stderr)\nb: \(b.stderr)")
        }
    }

    @Test("parleyd with a secret and parleyd without see each other advertised, never connect, and both log why")
    func secretOnOneSide() async throws {
        try await NetnsLab.with { lab in
            try await Self.installSecret(lab, on: [.a])
            let a = try await DaemonLabTests.parleyd(lab, .a, ["--secret-file", Self.secretFile])
            let b = try await DaemonLabTests.parleyd(lab, .b)
            try await a.waitForLog("this node requires a shared secret and the peer has none", timeout: .seconds(15))
            try await b.waitForLog("the peer requires a shared secret", timeout: .seconds(15))
            #expect(try await DaemonLabTests.peerNames(lab, .b).isEmpty)
            #expect(try await DaemonLabTests.peerNames(lab, .b, connected: false) == ["hosta"])
            let advertised = try await DaemonLabTests.browse(lab, .b, "hostb")
            #expect(!advertised.isEmpty && advertised.allSatisfy { $0.contains(#""auth=0""#) }, "\(advertised)")
            #expect(b.stderr.contains("parleyd runs OPEN"))
        }
    }
}
