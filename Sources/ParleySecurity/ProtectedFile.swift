import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Files only their owner may read: a shared secret, a device's private key. Reading checks who may access the
/// file on the opened descriptor (so the file read is the file checked); writing makes the file whole or not at
/// all, mode 0600. Failures say what went wrong with the file; the callers' own error types say which file it
/// was and what to do.
package enum ProtectedFile {
    package enum Failure: Error, Sendable, Hashable {
        case missing
        case unreadable(reason: String)
        case notAFile
        case wrongOwner(owner: UInt32, user: UInt32)
        case accessibleToOthers(mode: UInt32)
        case tooLong(limit: Int)
        case alreadyExists
        case cannotWrite(reason: String)
    }

    /// The file's bytes (at most `limit`), after checking who may access it.
    static func read(_ path: String, accessCheck: SharedSecret.AccessCheck, limit: Int) throws(Failure) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)
        guard fd >= 0 else {
            if errno == ENOENT { throw .missing }
            throw .unreadable(reason: errnoText())
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw .unreadable(reason: errnoText()) }
        guard info.st_mode & S_IFMT == S_IFREG else { throw .notAFile }
        let user = geteuid()
        // st_mode is 16 bits wide on Darwin, 32 on Linux.
        let mode = UInt32(info.st_mode)
        switch accessCheck {
        case .ownerOnly:
            guard info.st_uid == user else { throw .wrongOwner(owner: info.st_uid, user: user) }
            guard mode & 0o077 == 0 else { throw .accessibleToOthers(mode: mode & 0o7777) }
        case .systemdCredential:
            guard info.st_uid == user || info.st_uid == 0 else { throw .wrongOwner(owner: info.st_uid, user: user) }
            guard mode & 0o007 == 0 else { throw .accessibleToOthers(mode: mode & 0o7777) }
        }
        // Read one byte past the limit: a file that long is refused, not read whole.
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: limit + 1)
        while bytes.count <= limit {
            let count = chunk.withUnsafeMutableBytes { Foundation.read(fd, $0.baseAddress, limit + 1 - bytes.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw .unreadable(reason: errnoText())
            }
            if count == 0 { break }
            bytes += chunk[0..<count]
        }
        guard bytes.count <= limit else { throw .tooLong(limit: limit) }
        return bytes
    }

    /// What went wrong, for a caller's own message: a write that replaces fails only with ``Failure/cannotWrite(reason:)``.
    package static func writeFailureText(_ failure: Failure) -> String {
        if case .cannotWrite(let reason) = failure { reason } else { "\(failure)" }
    }

    /// Writes `value` as the project's own JSON files are (the devices parleyd paired with, the debuggers a device
    /// paired with): dates in ISO 8601, keys sorted, one member a line, replacing the file as ``write(_:to:replacing:)``.
    package static func writeJSON(_ value: some Encodable, to path: String) throws(Failure) {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let bytes: Data
        do {
            bytes = try encoder.encode(value)
        } catch {
            throw .cannotWrite(reason: "\(error)")
        }
        try write(Array(bytes), to: path, replacing: true)
    }

    /// Reads what ``writeJSON(_:to:)`` wrote; nil when there is no file to read.
    package static func readJSON<Value: Decodable>(_ type: Value.Type, at path: String) throws -> Value? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try decoder.decode(type, from: data)
    }

    /// Writes `bytes` to `path` with mode 0600, under a temporary name first; an existing file is replaced only if
    /// `replacing` is true (otherwise ``Failure/alreadyExists``, atomically: two writers cannot both succeed).
    package static func write(_ bytes: [UInt8], to path: String, replacing: Bool) throws(Failure) {
        let temporary = path + ".tmp-\(UUID().uuidString.prefix(8))"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .cannotWrite(reason: errnoText()) }
        var failure: String?
        // The umask may only remove bits, but be exact anyway.
        if fchmod(fd, 0o600) != 0 { failure = errnoText() }
        var offset = 0
        while failure == nil, offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Foundation.write(fd, $0.baseAddress, $0.count) }
            if written < 0 {
                if errno == EINTR { continue }
                failure = errnoText()
            } else {
                offset += written
            }
        }
        if failure == nil, fsync(fd) != 0 { failure = errnoText() }
        close(fd)
        defer { unlink(temporary) }
        if let failure { throw .cannotWrite(reason: failure) }
        if replacing {
            guard rename(temporary, path) == 0 else { throw .cannotWrite(reason: errnoText()) }
        } else {
            // link() fails if the name exists, atomically: no window in which another file could be replaced.
            guard link(temporary, path) == 0 else {
                if errno == EEXIST { throw .alreadyExists }
                throw .cannotWrite(reason: errnoText())
            }
        }
    }

    static func errnoText() -> String { String(cString: strerror(errno)) }
}
