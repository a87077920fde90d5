import Foundation
import Logging
@testable import ParleyDNSUpdate
import ParleyDiscovery
import ParleyTestSupport
import Testing

/// The registrar's ordering of nsupdate runs, with a stand-in for nsupdate that notes when each run starts and ends
/// (the DNS server itself is tested in WideAreaLabTests; here the question is only what is sent when).
@Suite("DNS registration: the order of updates")
struct DNSUpdateRegistrarTests {
    /// A directory with an executable `nsupdate` that reports "start add|remove" and "end add|remove" for each run,
    /// and holds a run for a second while the file `slow` exists. The reports come through a FIFO, read as they are
    /// written: a test waits for the run it needs, woken by its report.
    final class FakeNsupdate: Sendable {
        let directory: URL
        var program: URL { directory.appendingPathComponent("nsupdate") }
        var slow: URL { directory.appendingPathComponent("slow") }
        private var reports: URL { directory.appendingPathComponent("reports") }
        private let reported = Observed<[String]>([])

        init() throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("parley-nsupdate-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            guard mkfifo(directory.appendingPathComponent("reports").path, 0o600) == 0 else {
                throw PeerProcessError("mkfifo failed: errno \(errno)")
            }
            let script = """
                #!/bin/sh
                kind=remove
                grep -q '^update add' && kind=add
                echo "start $kind" >> '\(directory.path)/reports'
                [ -e '\(directory.path)/slow' ] && sleep 1
                echo "end $kind" >> '\(directory.path)/reports'
                """
            try script.write(to: program, atomically: true, encoding: .utf8)
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: program.path)
            // Read and write: the FIFO then never reads as ended between two runs, and opening it does not wait
            // for a writer. Each report is one short write, so reports never interleave.
            let fd = open(reports.path, O_RDWR | O_CLOEXEC)
            guard fd >= 0 else { throw PeerProcessError("cannot open the FIFO: errno \(errno)") }
            let reported = self.reported
            Thread.detachNewThread {
                defer { close(fd) }
                var buffer = [UInt8](repeating: 0, count: 512)
                var pending = ""
                while true {
                    let count = read(fd, &buffer, buffer.count)
                    if count < 0 && errno == EINTR { continue }
                    guard count > 0 else { return }
                    pending += String(decoding: buffer[..<count], as: UTF8.self)
                    while let newline = pending.firstIndex(of: "\n") {
                        let line = String(pending[..<newline])
                        pending.removeSubrange(...newline)
                        if line == Self.endOfReports { return }
                        reported.update { $0.append(line) }
                    }
                }
            }
        }

        /// Written by deinit so that the reader thread ends.
        private static let endOfReports = "no more runs"

        deinit {
            let fd = open(reports.path, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
            if fd >= 0 {
                _ = Array((Self.endOfReports + "\n").utf8).withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                close(fd)
            }
            try? FileManager.default.removeItem(at: directory)
        }

        /// A registrar that runs this stand-in for nsupdate.
        func registrar() -> DNSUpdateRegistrar {
            DNSUpdateRegistrar(
                settings: DNSUpdateSettings(domain: "parley.test", server: "127.0.0.1", keyFile: "/nonexistent", nsupdatePath: program.path),
                logger: Logger(label: "test")
            )
        }

        /// Every report so far, in order.
        var lines: [String] { reported.value }

        /// Every report written so far, once the reader has caught up: a marker goes into the FIFO behind them and
        /// is waited for, so a run that has ended is never missed because its report is still in the pipe.
        func linesWritten() async throws -> [String] {
            let marker = "read up to here \(UUID().uuidString)"
            let fd = open(reports.path, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
            guard fd >= 0 else { throw PeerProcessError("cannot open the FIFO: errno \(errno)") }
            _ = Array((marker + "\n").utf8).withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            close(fd)
            try await waitFor(marker)
            return lines.filter { !$0.hasPrefix("read up to here") }
        }

        /// Waits (up to 10 s) until `line` has been reported `count` times.
        func waitFor(_ line: String, count: Int = 1) async throws {
            do {
                _ = try await reported.wait(for: "nsupdate to report \"\(line)\"", timeout: .seconds(10)) {
                    $0.count(where: { $0 == line }) >= count ? true : nil
                }
            } catch is TestTimeout {
                Issue.record("nsupdate never reported \"\(line)\" \(count) time(s): \(lines)")
            }
        }
    }

    static let advertisement = Advertisement(instanceName: "Alpha", port: 7206, txt: ["id": "a"])

    @Test("a stop during an update removes the records after it, and a registration asked for after the stop is not sent")
    func stopDuringAnUpdate() async throws {
        let nsupdate = try FakeNsupdate()
        #expect(FileManager.default.createFile(atPath: nsupdate.slow.path, contents: nil))
        let registrar = nsupdate.registrar()
        registrar.register(Self.advertisement)
        try await nsupdate.waitFor("start add")

        // Stopped while that update is still on its way; then a network change asks to advertise again.
        registrar.stop()
        registrar.register(Self.advertisement)
        #expect(!registrar.isRegistering, "registering again after the stop")
        await registrar.finished()
        #expect(try await nsupdate.linesWritten() == ["start add", "end add", "start remove", "end remove"])
    }

    @Test("a new registration while a removal is on its way is sent after the removal")
    func registerAfterWithdraw() async throws {
        let nsupdate = try FakeNsupdate()
        let registrar = nsupdate.registrar()
        registrar.register(Self.advertisement)
        try await nsupdate.waitFor("end add")

        #expect(FileManager.default.createFile(atPath: nsupdate.slow.path, contents: nil))
        registrar.deregister()
        registrar.register(Self.advertisement)
        try await nsupdate.waitFor("end add", count: 2)
        #expect(try await nsupdate.linesWritten() == ["start add", "end add", "start remove", "end remove", "start add", "end add"])
        registrar.stop()
        await registrar.finished()
    }
}
