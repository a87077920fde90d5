import Foundation
import NIOCore
import ParleyDebugger
import ParleyHistory
import ParleyTestSupport

/// Runs `body` with a fresh directory and removes it afterwards, whatever happens.
func withTemporaryDirectory<T: Sendable>(_ body: (String) async throws -> T) async throws -> T {
    // In RAM when there is a tmpfs: on a disk, many megabytes of dirty data throttle every writer on the machine.
    let base = FileManager.default.isWritableFile(atPath: "/dev/shm") ? URL(fileURLWithPath: "/dev/shm") : FileManager.default.temporaryDirectory
    let path = base.appendingPathComponent("parley-history-\(UUID().uuidString)").path
    try await PeerProcess.offPool { try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true) }
    do {
        let result = try await body(path)
        try? await PeerProcess.offPool { try FileManager.default.removeItem(atPath: path) }
        return result
    } catch {
        try? await PeerProcess.offPool { try FileManager.default.removeItem(atPath: path) }
        throw error
    }
}

/// Opens a store in a fresh directory, runs `body`, closes the store and removes the directory.
func withStore<T: Sendable>(limits: RetentionLimits = .default, _ body: (HistoryStore, String) async throws -> T) async throws -> T {
    try await withTemporaryDirectory { directory in
        let store = try await HistoryStore.open(directory: directory, limits: limits)
        do {
            let result = try await body(store, directory)
            try await store.close()
            return result
        } catch {
            try? await store.close()
            throw error
        }
    }
}

/// A fixed, whole-millisecond time `seconds` after an arbitrary origin, so stored times compare exactly.
func testTime(_ seconds: Double) -> Date {
    Date(timeIntervalSince1970: 1_800_000_000 + seconds)
}

func record(_ action: String, _ state: String, screenshot: [UInt8] = []) -> StateRecord {
    StateRecord(action: action, state: ByteBuffer(string: state), screenshot: ByteBuffer(bytes: screenshot))
}
