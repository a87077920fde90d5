import Glibc
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

    @Test("at start the soft open-files limit is raised to the hard one")
    func raised() {
        let budget = DescriptorBudget.raised()
        var limits = rlimit()
        #expect(getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limits) == 0)
        #expect(limits.rlim_cur == limits.rlim_max)
        #expect(budget.limit == Int(clamping: limits.rlim_cur))
    }
}
