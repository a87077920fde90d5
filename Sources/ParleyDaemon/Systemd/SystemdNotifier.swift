import Foundation

/// systemd's readiness protocol (sd_notify(3)), by hand: each state is one datagram sent to the Unix socket named
/// by `$NOTIFY_SOCKET` — a path, or an abstract socket when it starts with `@`. Without `$NOTIFY_SOCKET` (not
/// started by systemd with `Type=notify`) every call does nothing.
public struct SystemdNotifier: Sendable {
    /// The socket address from `$NOTIFY_SOCKET`, or `nil`.
    public let socketPath: String?
    /// Half of `$WATCHDOG_USEC` (when it is meant for this process): how often to send `WATCHDOG=1`.
    public let watchdogInterval: Duration?

    public init(environment: [String: String]) {
        let path = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
        socketPath = path
        let forUs = environment["WATCHDOG_PID"].map { Int32($0) == getpid() } ?? true
        if forUs, let text = environment["WATCHDOG_USEC"], let microseconds = Int64(text), microseconds > 0 {
            watchdogInterval = .microseconds(microseconds / 2)
        } else {
            watchdogInterval = nil
        }
    }

    public var isEnabled: Bool { socketPath != nil }

    /// Sends `state` (e.g. `READY=1`, or several `KEY=value` lines) as one datagram. A failure is returned, and is
    /// the caller's to log, never fatal (systemd may have gone away, or the socket may be full).
    @discardableResult
    public func notify(_ state: String) -> Result<Void, NotifyError> {
        guard let socketPath else { return .success(()) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var pathBytes = Array(socketPath.utf8)
        let abstract = pathBytes.first == UInt8(ascii: "@")
        if abstract { pathBytes[0] = 0 }  // abstract namespace: a leading NUL, and no terminating one
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard pathBytes.count < capacity else { return .failure(.pathTooLong(socketPath)) }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer.copyBytes(from: pathBytes)
        }
        let length = MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + pathBytes.count + (abstract ? 0 : 1)

        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return .failure(.socketFailed(errno: errno)) }
        defer { close(fd) }
        let payload = Array(state.utf8)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                payload.withUnsafeBytes { bytes in
                    sendto(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL), socketAddress, socklen_t(length))
                }
            }
        }
        guard sent == payload.count else { return .failure(.sendFailed(socketPath, errno: errno)) }
        return .success(())
    }

    public enum NotifyError: Error, Sendable, CustomStringConvertible {
        /// `NOTIFY_SOCKET` names a path longer than a Unix socket address holds.
        case pathTooLong(String)
        /// No datagram socket could be made.
        case socketFailed(errno: Int32)
        /// The datagram was not sent (systemd gone, or its socket full).
        case sendFailed(String, errno: Int32)

        public var description: String {
            switch self {
            case .pathTooLong(let path): "NOTIFY_SOCKET is too long for a socket address: \(path)"
            case .socketFailed(let code): "cannot create a socket to notify systemd: \(String(cString: strerror(code)))"
            case .sendFailed(let path, let code): "cannot notify systemd at \(path): \(String(cString: strerror(code)))"
            }
        }
    }
}
