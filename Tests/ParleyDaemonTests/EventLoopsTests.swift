import Foundation
import ParleyTestSupport
import Testing

@Suite("parleyd's event loops")
struct EventLoopsTests {
    /// parleyd's threads that run NIO's singleton event loops (`NIO-SGLTN-<group>-#<loop>`; its thread pool's are
    /// `…TP-#<n>`).
    static func eventLoopThreads(of pid: Int32) throws -> Int {
        try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task").filter { task in
            let name = (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/comm", encoding: .utf8)) ?? ""
            return name.wholeMatch(of: /NIO-SGLTN-\d+-#\d+\n?/) != nil
        }.count
    }

    @Test("one event loop by default; NIO_SINGLETON_GROUP_LOOP_COUNT chooses another number")
    func loops() async throws {
        let single = try await ParleydProcess.start()
        #expect(try Self.eventLoopThreads(of: single.pid) == 1)
        #expect(try await single.stop() == 0)

        let three = try await ParleydProcess.start(environment: ["NIO_SINGLETON_GROUP_LOOP_COUNT": "3"])
        #expect(try Self.eventLoopThreads(of: three.pid) == 3)
        #expect(try await three.stop() == 0)
    }
}
