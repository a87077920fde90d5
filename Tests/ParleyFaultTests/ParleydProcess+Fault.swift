import Foundation
import ParleyTestSupport

/// What the fault tests look at beyond the log: what an operator would, parleyd's memory in /proc and the warnings it
/// held back.
extension ParleydProcess {
    /// parleyd's resident memory now and at its peak.
    func memory() throws -> ProcessMemory { try ProcessMemory(pid: pid) }

    /// How many times parleyd logged the warning `message`: the lines it wrote, plus the ones its log throttle held
    /// back and counted in a `log lines held back` line (written a second after the first one held back).
    func warningCount(_ message: String) -> Int {
        let lines = log.split(separator: "\n")
        // Lines read `<time> warning parleyd: <message> key=value…`; a value with spaces is quoted.
        let written = lines.filter { $0.contains(": \(message)") }.count
        let heldBack = lines.filter { $0.contains(": log lines held back") && $0.contains("line=\"\(message)\"") }.map { line in
            line.firstMatch(of: /count=(\d+)/).flatMap { Int($0.1) } ?? 0
        }
        return written + heldBack.reduce(0, +)
    }
}
