import Foundation

/// Why the control socket was not opened: its directory would let another local user take it over, or another
/// process already serves it. The text names no program's options: a program adds its own (parleyd's, by case).
public enum ControlSocketProblem: Error, Sendable, Hashable, CustomStringConvertible {
    /// The directory is a symbolic link (someone could point it anywhere).
    case directoryIsSymlink(String)
    /// The path exists and is not a directory.
    case notADirectory(String)
    /// The directory belongs to another user, who could replace the socket.
    case directoryOwnedByOther(String, owner: UInt32)
    /// Others than the owner may create or remove files in the directory.
    case directoryWritableByOthers(String, mode: UInt32)
    /// The directory could not be created or inspected.
    case cannotPrepare(String, reason: String)
    /// A process already accepts connections on the socket (another parleyd with the same socket): its pid and
    /// command name, when the kernel told them (`SO_PEERCRED`, `/proc/<pid>/comm`).
    case inUse(String, pid: Int32?, command: String?)

    public var description: String {
        switch self {
        case .directoryIsSymlink(let directory):
            "the control socket's directory \(directory) is a symbolic link; remove it (a missing directory is created, mode 0700) or choose another path for the socket"
        case .notADirectory(let path):
            "\(path), where the control socket's directory should be, is not a directory; remove it or choose another path for the socket"
        case .directoryOwnedByOther(let directory, let owner):
            "the control socket's directory \(directory) belongs to uid \(owner), not to this user (uid \(geteuid())): another user could replace the socket. Remove it, or choose a path for the socket in a directory of your own"
        case .directoryWritableByOthers(let directory, let mode):
            "the control socket's directory \(directory) is writable by others (mode \(String(mode & 0o7777, radix: 8))): they could replace the socket. Run `chmod go-w \(directory)` or choose another path for the socket"
        case .cannotPrepare(let directory, let reason):
            "cannot prepare the control socket's directory \(directory): \(reason)"
        case .inUse(let path, let pid, let command):
            "\(Self.holder(pid: pid, command: command)) is serving the control socket \(path); stop it first, or give this one a socket of its own"
        }
    }

    /// `another parleyd (pid 4242)`, `another process (socat, pid 4242)`, or without a pid `another process
    /// (probably another parleyd)`.
    private static func holder(pid: Int32?, command: String?) -> String {
        guard let pid else { return "another process (probably another parleyd)" }
        switch command {
        case "parleyd"?: return "another parleyd (pid \(pid))"
        case let command?: return "another process (\(command), pid \(pid))"
        case nil: return "another process (pid \(pid))"
        }
    }
}

/// Checks, before binding, that the control socket's directory is safe the way ssh-agent and tmux check theirs:
/// a real directory (not a symlink), owned by this user (or root), not writable by anyone else, sticky or not. A
/// missing directory is created with mode 0700. A socket file that is there already is taken over only if nobody
/// answers on it: a live one belongs to a running process.
enum ControlSocketGuard {
    static func prepare(socketPath path: String) throws(ControlSocketProblem) {
        let directory = (path as NSString).deletingLastPathComponent
        try prepareDirectory(directory.isEmpty ? "." : directory)
        if let server = server(of: path) { throw .inUse(path, pid: server.pid, command: server.command) }
    }

    static func prepareDirectory(_ directory: String) throws(ControlSocketProblem) {
        var info = stat()
        if lstat(directory, &info) != 0 {
            guard errno == ENOENT else { throw .cannotPrepare(directory, reason: String(cString: strerror(errno))) }
            let parent = (directory as NSString).deletingLastPathComponent
            if !parent.isEmpty, parent != directory {
                do {
                    try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
                } catch {
                    throw .cannotPrepare(parent, reason: error.localizedDescription)
                }
            }
            // 0700 whatever the umask: nobody else can even look in while the socket is being set up.
            guard mkdir(directory, 0o700) == 0 || errno == EEXIST else {
                throw .cannotPrepare(directory, reason: String(cString: strerror(errno)))
            }
            guard lstat(directory, &info) == 0 else { throw .cannotPrepare(directory, reason: String(cString: strerror(errno))) }
        }
        let type = info.st_mode & S_IFMT
        if type == S_IFLNK { throw .directoryIsSymlink(directory) }
        guard type == S_IFDIR else { throw .notADirectory(directory) }
        guard info.st_uid == geteuid() || info.st_uid == 0 else { throw .directoryOwnedByOther(directory, owner: info.st_uid) }
        // Sticky or not (like /tmp): others who may add files there may bind a socket of their own at the path in
        // the moment between our removing a dead socket file and binding ours, as tmux and ssh-agent also reason.
        if info.st_mode & 0o022 != 0 { throw .directoryWritableByOthers(directory, mode: UInt32(info.st_mode)) }
    }

    /// The process accepting connections on the Unix socket at `path` now, if any: connects, and asks the kernel
    /// who is at the other end (`SO_PEERCRED`: the pid of the process that bound and listens on it).
    static func server(of path: String) -> (pid: Int32?, command: String?)? {
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFSOCK else { return nil }
        let fd = socket(AF_UNIX, streamSocketType, 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return nil }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) == 0
            }
        }
        guard connected else { return nil }
        let pid = peerProcess(of: fd)
        return (pid, pid.flatMap(command(of:)))
    }

    #if os(Linux)
    /// `SOCK_STREAM`: an enum Glibc imports, a plain integer on Apple platforms.
    private static var streamSocketType: Int32 { Int32(SOCK_STREAM.rawValue) }

    /// The pid of the process at the other end of the connected Unix socket `fd`, from `SO_PEERCRED`.
    private static func peerProcess(of fd: Int32) -> Int32? {
        // struct ucred { pid_t pid; uid_t uid; gid_t gid; }: three 32-bit fields (glibc declares the struct only
        // under _GNU_SOURCE, so it is read as three Int32s).
        var credentials = [Int32](repeating: 0, count: 3)
        var length = socklen_t(MemoryLayout<Int32>.size * 3)
        let status = credentials.withUnsafeMutableBytes { getsockopt(fd, SOL_SOCKET, SO_PEERCRED, $0.baseAddress, &length) }
        guard status == 0, length == socklen_t(MemoryLayout<Int32>.size * 3), credentials[0] > 0 else { return nil }
        return credentials[0]
    }

    /// A process's command name (`/proc/<pid>/comm`), if it can be read.
    private static func command(of pid: Int32) -> String? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8) else { return nil }
        let name = text.trimmingCharacters(in: .whitespacesAndNewlines)
        return name.isEmpty ? nil : name
    }
    #else
    private static var streamSocketType: Int32 { SOCK_STREAM }

    /// The pid of the process at the other end of the connected Unix socket `fd`: `LOCAL_PEERPID` on Apple
    /// platforms.
    private static func peerProcess(of fd: Int32) -> Int32? {
        var pid: pid_t = 0
        var length = socklen_t(MemoryLayout<pid_t>.size)
        guard getsockopt(fd, SOL_LOCAL, LOCAL_PEERPID, &pid, &length) == 0, pid > 0 else { return nil }
        return pid
    }

    /// There is no `/proc` to read a command name from: the pid says enough.
    private static func command(of pid: Int32) -> String? { nil }
    #endif
}
