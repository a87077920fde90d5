import Foundation
import ParleyTestSupport
import Testing

/// `scripts/check-portability` against files written for it: each rule is broken once, and kept once.
@Suite("Portability guard")
struct PortabilityGuardTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("scripts/check-portability").path

    @Test("each Linux-only habit is named with its file and line; the same code behind #if os(Linux) or with a Darwin branch passes")
    func rules() async throws {
        let directory = try ScratchDirectory(prefix: "portability")
        _ = try directory.write("GlibcOnly.swift", "#if canImport(Glibc)\nimport Glibc\n#endif\nlet x = 1\n")
        _ = try directory.write("Qualified.swift", "#if canImport(Glibc)\nimport Glibc\n#elseif canImport(Darwin)\nimport Darwin\n#endif\nlet n = Glibc.write(1, nil, 0)\n")
        _ = try directory.write(
            "LinuxOnly.swift",
            "let a = AF_NETLINK\nlet b = SO_PEERCRED\nlet c = Int32(SOCK_STREAM.rawValue)\nlet d = \"/proc/self/comm\"\n// SO_PEERCRED in a comment is fine\n")
        let broken = try await ChildProcess.run(Self.script, [directory.path])
        #expect(broken.status == 1)
        for expected in [
            "GlibcOnly.swift:1: imports Glibc with no Darwin branch", "Qualified.swift:6: names Glibc. explicitly",
            "LinuxOnly.swift:1: AF_NETLINK outside #if os(Linux)", "LinuxOnly.swift:2: SO_PEERCRED outside #if os(Linux)",
            "LinuxOnly.swift:3: SOCK_STREAM.rawValue outside #if os(Linux)", "LinuxOnly.swift:4: /proc",
        ] {
            #expect(broken.stderr.contains(expected), "\(expected): \(broken.stderr)")
        }
        #expect(!broken.stderr.contains("LinuxOnly.swift:5"), "\(broken.stderr)")

        let fixed = try ScratchDirectory(prefix: "portability")
        _ = try fixed.write("Portable.swift", """
            #if canImport(Glibc)
            import Glibc
            #elseif canImport(Darwin)
            import Darwin
            #endif
            #if os(Linux)
            let a = AF_NETLINK
            let c = Int32(SOCK_STREAM.rawValue)
            let d = "/proc/self/comm"
            #else
            let c = SOCK_STREAM
            #endif
            """)
        let passed = try await ChildProcess.run(Self.script, [fixed.path])
        #expect(passed.status == 0, "\(passed.stderr)")
    }

    @Test("the app-side libraries pass")
    func sourcesPass() async throws {
        let result = try await ChildProcess.run(Self.script, [])
        #expect(result.status == 0, "\(result.stderr)")
    }
}
