import Foundation
import ParleyTestSupport
import Testing

@testable import ParleyDaemon

@Suite("File descriptor budget")
struct DescriptorBudgetTests {
    @Test("the web debugger gets what the Parley port and the reserve leave, up to its cap, and never fewer than 8")
    func webShare() {
        #expect(DescriptorBudget(limit: 65_536).webConnections(wanted: 128, parleyConnections: 256, pendingConnections: 256) == 128)
        #expect(DescriptorBudget(limit: 1_024).webConnections(wanted: 128, parleyConnections: 256, pendingConnections: 256) == 128)
        #expect(DescriptorBudget(limit: 700).webConnections(wanted: 128, parleyConnections: 256, pendingConnections: 256) == 60)
        #expect(DescriptorBudget(limit: 256).webConnections(wanted: 128, parleyConnections: 256, pendingConnections: 256) == 8)
    }

    @Test("at start parleyd raises its soft open-files limit to the hard one")
    func raised() async throws {
        let daemon = try await ParleydProcess.start(openFiles: 512, 4_096)
        let limits = try String(contentsOfFile: "/proc/\(daemon.pid)/limits", encoding: .utf8)
        let openFiles = limits.split(separator: "\n").first { $0.hasPrefix("Max open files") }?.split(separator: " ").dropFirst(3).prefix(2)
        #expect(openFiles.map(Array.init) == ["4096", "4096"], "\(limits)")
        #expect(try await daemon.stop() == 0)
    }
}
