import Foundation
import ParleyTestSupport

/// A process's resident memory as Linux reports it in `/proc/<pid>/status`: `VmRSS` now and `VmHWM`, the peak
/// since the process started (so a spike between two samples is not missed).
struct ProcessMemory: Sendable, CustomStringConvertible {
    var resident: Int
    var peakResident: Int

    /// Reads `/proc/<pid>/status` (`"self"` for this process). procfs answers from kernel memory at once.
    init(pid: String) throws {
        let path = "/proc/\(pid)/status"
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw PeerProcessError("cannot read \(path): is the process still running?")
        }
        func kilobytes(_ key: String) throws -> Int {
            guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(key + ":") }),
                let value = line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.flatMap({ Int($0) })
            else { throw PeerProcessError("\(path) has no \(key) line") }
            return value * 1024
        }
        resident = try kilobytes("VmRSS")
        peakResident = try kilobytes("VmHWM")
    }

    init(pid: Int32) throws { try self.init(pid: String(pid)) }

    static func ofThisProcess() throws -> ProcessMemory { try ProcessMemory(pid: "self") }

    var description: String { "RSS \(Self.mebibytes(resident)), peak \(Self.mebibytes(peakResident))" }

    static func mebibytes(_ bytes: Int) -> String { String(format: "%.1f MiB", Double(bytes) / 1_048_576) }
}
