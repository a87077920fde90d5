import Foundation
import ParleyTestSupport
import Testing

/// The lab itself: a test run that is killed cannot tear its labs down, so the next run does it.
@Suite("Lab hygiene", .serialized, .timeLimit(.minutes(1)))
struct LabHygieneTests {
    @Test("a lab whose owner process has ended is taken down by sweep; one whose owner lives is kept")
    func sweepRemovesOrphans() async throws {
        if let reason = NetnsLab.unavailableReason {
            if ProcessInfo.processInfo.environment["CI"] == "true" { Issue.record("lab unavailable with CI=true: \(reason)") }
            return
        }
        let owner = try Subprocess(["/bin/sleep", "600"])
        let lab = "sweep\(String(getpid(), radix: 36))"
        defer {
            owner.signal(SIGKILL)
            _ = try? Subprocess.run([NetnsLab.script, "down", lab])
        }
        try await NetnsLab.check([NetnsLab.script, "up", lab, "--no-avahi", "--owner", String(owner.pid)])
        func namespaces() async throws -> [String] {
            try await NetnsLab.check(["/bin/sh", "-c", "ip netns list"]).split(separator: "\n").compactMap { $0.split(separator: " ").first.map(String.init) }
        }

        try await NetnsLab.check([NetnsLab.script, "sweep"])
        #expect(try await namespaces().filter { $0.hasPrefix(lab + "-") }.sorted() == [lab + "-a", lab + "-b"])

        owner.signal(SIGKILL)
        _ = try await PeerProcess.offPool { owner.waitForExit() }
        try await NetnsLab.check([NetnsLab.script, "sweep"])
        #expect(try await namespaces().filter { $0.hasPrefix(lab + "-") }.isEmpty)
    }
}
