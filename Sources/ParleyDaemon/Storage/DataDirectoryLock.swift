import Foundation

/// One parleyd per data directory: an exclusive `flock` on `<data directory>/parleyd.lock`, held while parleyd
/// runs and released by the kernel when it exits, however it exits (a crash leaves no stale lock). The file holds
/// the holder's PID, so that the refusal can name it.
final class DataDirectoryLock {
    static let fileName = "parleyd.lock"
    private let fd: Int32

    /// Another process holds the lock.
    struct Held: Error, CustomStringConvertible {
        var directory: String
        var holder: String?
        var description: String {
            "another parleyd\(holder.map { " (pid \($0))" } ?? "") is using the data directory \(directory); stop it first, or give this one its own --data-directory and --control-socket"
        }
    }

    struct Failed: Error, CustomStringConvertible {
        var path: String
        var reason: String
        var description: String { "cannot lock \(path): \(reason)" }
    }

    init(directory: String) throws {
        let path = URL(fileURLWithPath: directory).appendingPathComponent(Self.fileName).path
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw Failed(path: path, reason: String(cString: strerror(errno))) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let busy = errno == EWOULDBLOCK
            let reason = String(cString: strerror(errno))
            var buffer = [UInt8](repeating: 0, count: 32)
            let count = pread(fd, &buffer, buffer.count, 0)
            close(fd)
            guard busy else { throw Failed(path: path, reason: reason) }
            let holder = count > 0 ? String(decoding: buffer[..<count], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) : nil
            throw Held(directory: directory, holder: holder?.isEmpty == false ? holder : nil)
        }
        let pid = Array("\(getpid())\n".utf8)
        _ = ftruncate(fd, 0)
        _ = pwrite(fd, pid, pid.count, 0)
        self.fd = fd
    }

    deinit { close(fd) }
}
