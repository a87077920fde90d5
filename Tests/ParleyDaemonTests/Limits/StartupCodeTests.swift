import Foundation
import ParleyTestSupport
import Testing

@testable import ParleyDaemon

@Suite("Start-up code given back once ready")
struct StartupCodeTests {
    /// A mapping's lines in `/proc/<pid>/smaps`: its header, then (among others) how many of its pages are its own.
    static func mapping(_ header: String, anonymousKB: Int = 0) -> String {
        "\(header)\nSize:               1024 kB\nRss:                 512 kB\nAnonymous:      \(anonymousKB) kB\nVmFlags: rd ex mr mw me\n"
    }

    static let smaps = [
        mapping("55d0a0000000-55d0a0a17000 r--p 00000000 fe:00 1311  /usr/bin/parleyd"),
        mapping("55d0a0a17000-55d0a2f00000 r-xp 00a16000 fe:00 1311  /usr/bin/parleyd"),
        // Relocated by the loader, then made read-only (RELRO): its pages exist nowhere else.
        mapping("55d0a2f00000-55d0a3300000 r--p 02eff000 fe:00 1311  /usr/bin/parleyd", anonymousKB: 1464),
        mapping("55d0a3300000-55d0a3700000 rw-p 032ff000 fe:00 1311  /usr/bin/parleyd"),
        mapping("7f0951000000-7f09510a0000 r-xp 00000000 fe:00 2001  /usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30"),
        mapping("7f0952000000-7f0952100000 r-xp 00000000 fe:00 2002  /opt/my tools/parleyd"),
        mapping("7f0953000000-7f0953100000 rw-p 00000000 00:00 0"),
        mapping("7ffd1c000000-7ffd1c002000 r-xp 00000000 00:00 0  [vdso]"),
    ].joined()

    @Test("only the program's own read-only mappings without pages of their own: not its data, its relocated constants, a library, or another file")
    func releasableRegions() {
        #expect(
            StartupCode.releasableRegions(in: Self.smaps, of: "/usr/bin/parleyd") == [
                .init(start: 0x55d0_a000_0000, end: 0x55d0_a0a1_7000), .init(start: 0x55d0_a0a1_7000, end: 0x55d0_a2f0_0000),
            ])
        // A path with a space, and one replaced on disk while the program runs (as /proc/self/exe then reads).
        #expect(StartupCode.releasableRegions(in: Self.smaps, of: "/opt/my tools/parleyd") == [.init(start: 0x7f09_5200_0000, end: 0x7f09_5210_0000)])
        let replaced = Self.mapping("55d0a0a17000-55d0a2f00000 r-xp 00a16000 fe:00 1311  /usr/bin/parleyd (deleted)")
        #expect(StartupCode.releasableRegions(in: replaced, of: "/usr/bin/parleyd (deleted)").count == 1)
        #expect(StartupCode.releasableRegions(in: Self.smaps, of: "/usr/bin/parley").isEmpty)
        // A mapping whose Anonymous line is missing is not released.
        #expect(StartupCode.releasableRegions(in: "55d0a0a17000-55d0a2f00000 r-xp 00a16000 fe:00 1311  /usr/bin/parleyd\nRss: 4 kB\n", of: "/usr/bin/parleyd").isEmpty)
        #expect(StartupCode.releasableRegions(in: "garbage\n\n-- r-xp", of: "/usr/bin/parleyd").isEmpty)
    }

    @Test("released in a running process: its code's pages leave its resident memory")
    func releasedInThisProcess() throws {
        let released = StartupCode.release()
        #expect(released.regions >= 1)
        let before = try #require(released.residentFileBefore)
        let after = try #require(released.residentFileAfter)
        #expect(after < before, "RssFile \(before) → \(after) bytes")
    }

    @Test("parleyd releases its start-up code once ready, and says so at debug level")
    func parleydReleases() async throws {
        let daemon = try await ParleydProcess.start(arguments: ["--log-level", "debug"])
        let line = try await daemon.waitForLine(containing: "start-up code released")
        // Its code at least; how many mappings hold its constants depends on the linker.
        let regions = line.firstMatch(of: /regions=(\d+)/).flatMap { Int($0.1) }
        #expect((regions ?? 0) >= 1, "\(line)")
        #expect(try await daemon.stop() == 0)
    }
}
