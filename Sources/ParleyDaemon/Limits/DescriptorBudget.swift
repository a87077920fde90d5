import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// parleyd's file descriptors, shared out so that one door cannot take them all: the Parley port keeps room for
/// its connections and pending handshakes, and the control socket, the history and the process's own needs
/// (libdispatch traps when it cannot open a file under `/proc`) keep a reserve; the web debugger gets what is left,
/// up to its own cap.
struct DescriptorBudget: Equatable {
    /// The soft limit after ``raised()``.
    var limit: Int
    /// Kept for the control socket, the history's database, logging and the runtime.
    static let reserve = 128

    /// Raises the soft limit on open files to the hard limit (systemd's default soft limit is 1024, far below the
    /// hard one), and returns the budget.
    static func raised() -> DescriptorBudget {
        var limits = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limits) == 0 else { return DescriptorBudget(limit: 1024) }
        if limits.rlim_cur < limits.rlim_max {
            var raised = limits
            raised.rlim_cur = limits.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limits = raised }
        }
        // RLIM_INFINITY reads as a huge number; nothing here needs more than Int's range.
        return DescriptorBudget(limit: Int(clamping: limits.rlim_cur))
    }

    /// The web debugger's share: what the Parley port (its connections and pending handshakes) and the reserve
    /// leave, at most `wanted`, and at least a few, so that a person can still open a page.
    func webConnections(wanted: Int, parleyConnections: Int, pendingConnections: Int) -> Int {
        max(8, min(wanted, limit - Self.reserve - parleyConnections - pendingConnections))
    }
}
