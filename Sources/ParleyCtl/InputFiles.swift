import Foundation
import Parley

/// What parleyctl reads from a file or standard input, read through `BlockingPool` so that the wait holds up no
/// thread of Swift's cooperative pool.
enum InputFiles {
    /// Standard input may wait as long as whoever writes it: a thread of its own, so that the wait holds up none of
    /// `BlockingPool.shared`'s threads (the transceiver of `--direct` uses them).
    private static let standardInputReads = BlockingPool.serial()

    /// Everything on standard input, up to its end.
    static func standardInput() async throws -> Data {
        try await standardInputReads.run { FileHandle.standardInput.readDataToEndOfFile() }
    }

    /// The file at `path`, or standard input for `-`.
    static func contents(of path: String) async throws -> Data {
        if path == "-" { return try await standardInput() }
        return try await BlockingPool.shared.run { try Data(contentsOf: URL(fileURLWithPath: path)) }
    }
}
