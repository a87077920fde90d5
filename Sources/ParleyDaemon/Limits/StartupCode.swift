import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// parleyd's own code that only start-up ran, given back once it is ready.
///
/// Starting touches far more of the program than running does: the command line, the configuration, the history's
/// migrations, the device identity, the HTTP servers' set-up. The kernel maps the code a process runs from the page
/// cache, and 64 KiB around every page touched, so an idle parleyd kept some 18 MiB of
/// start-up code mapped, most of its resident memory (docs/performance.md, "Idle memory"). Dropping its code
/// read-only mappings' pages from the page tables once ready costs nothing lasting: the pages stay in the page cache, and
/// what runs again is mapped again on its first use (a minor fault). The resident memory then shows the code
/// parleyd runs, and the start-up code is page cache the kernel may reclaim like any other file's.
///
/// Only the program's own read-only mappings (its code, its constants) are dropped, and only those that hold no page
/// of their own (`Anonymous: 0 kB`): what is dropped comes back from the file as it was. Pages the loader relocated
/// (`RELRO`) and the data the program writes exist nowhere else, and are kept.
enum StartupCode {
    /// One mapping, as `/proc/self/smaps` lists it.
    struct Region: Equatable {
        var start: UInt
        var end: UInt
        var bytes: Int { Int(end - start) }
    }

    /// What ``release()`` did, for its log line.
    struct Released: Equatable {
        var regions: Int
        /// File-backed resident memory (`RssFile`) before and after, in bytes; nil when `/proc` did not say.
        var residentFileBefore: Int?
        var residentFileAfter: Int?
    }

    /// The mappings of the program at `path` in `smaps`, the text of `/proc/<pid>/smaps`, that can be dropped:
    /// read-only, and without anonymous pages. A mapping's first line is `start-end perms offset device inode path`,
    /// where the path is the rest of the line (it may hold spaces, and ends in ` (deleted)` once the file was
    /// replaced, as `/proc/self/exe` then reads too); its `Anonymous:` line follows among others.
    static func releasableRegions(in smaps: String, of path: String) -> [Region] {
        var regions: [Region] = []
        /// The mapping being read: a read-only one of `path`, until its `Anonymous:` line says whether it has pages of its own.
        var candidate: Region?
        for line in smaps.split(separator: "\n") {
            let fields = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
            if fields.count >= 5, fields[0].contains("-"), fields[1].count == 4 {
                candidate = nil
                let bounds = fields[0].split(separator: "-")
                guard fields.count == 6, fields[1] == "r-xp" || fields[1] == "r--p", fields[5].drop(while: { $0 == " " }) == path[...],
                    bounds.count == 2, let start = UInt(bounds[0], radix: 16), let end = UInt(bounds[1], radix: 16), start < end
                else { continue }
                candidate = Region(start: start, end: end)
            } else if let region = candidate, fields.first == "Anonymous:" {
                if fields.count >= 2, fields[1] == "0" { regions.append(region) }
                candidate = nil
            }
        }
        return regions
    }

    /// Drops the pages of this process's own code and constants from its page tables. Nothing else of the process is touched;
    /// when `/proc` cannot be read nothing is done.
    @discardableResult
    static func release() -> Released {
        guard let executable = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"),
            let smaps = try? String(contentsOfFile: "/proc/self/smaps", encoding: .utf8)
        else { return Released(regions: 0) }
        let before = residentFileBytes()
        var released = 0
        for region in releasableRegions(in: smaps, of: executable) {
            guard let start = UnsafeMutableRawPointer(bitPattern: region.start) else { continue }
            if madvise(start, region.bytes, Int32(MADV_DONTNEED)) == 0 { released += 1 }
        }
        return Released(regions: released, residentFileBefore: before, residentFileAfter: residentFileBytes())
    }

    /// `RssFile` of `/proc/self/status`, in bytes.
    static func residentFileBytes() -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("RssFile:") }),
            let kilobytes = line.split(whereSeparator: \.isWhitespace).dropFirst().first.flatMap({ Int($0) })
        else { return nil }
        return kilobytes * 1024
    }
}
