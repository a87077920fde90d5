import Foundation

/// Why the control socket was not opened: its directory would let another local user take it over, or another
/// process already serves it.
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
    /// A process already accepts connections on the socket (another parleyd with the same socket).
    case inUse(String)

    public var description: String {
        switch self {
        case .directoryIsSymlink(let directory):
            "the control socket's directory \(directory) is a symbolic link; remove it (parleyd creates the directory itself) or choose another --control-socket"
        case .notADirectory(let path):
            "\(path), where the control socket's directory should be, is not a directory; remove it or choose another --control-socket"
        case .directoryOwnedByOther(let directory, let owner):
            "the control socket's directory \(directory) belongs to uid \(owner), not to this user (uid \(geteuid())): another user could replace the socket. Remove it, or set XDG_RUNTIME_DIR or --control-socket to a directory of your own"
        case .directoryWritableByOthers(let directory, let mode):
            "the control socket's directory \(directory) is writable by others (mode \(String(mode & 0o7777, radix: 8))): they could replace the socket. Run `chmod go-w \(directory)` or choose another --control-socket"
        case .cannotPrepare(let directory, let reason):
            "cannot prepare the control socket's directory \(directory): \(reason)"
        case .inUse(let path):
            "another process (probably another parleyd) is serving the control socket \(path); stop it first, or give this one its own --control-socket and --data-directory"
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
        if isServed(path) { throw .inUse(path) }
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

    /// Whether something accepts connections on the Unix socket at `path` now.
    static func isServed(_ path: String) -> Bool {
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFSOCK else { return false }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) == 0
            }
        }
    }
}
