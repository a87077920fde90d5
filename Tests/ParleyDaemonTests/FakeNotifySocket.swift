import Foundation
import ParleyTestSupport

/// A fake systemd: a Unix datagram socket bound at `path` (or an abstract name with `@`). A dispatch source reads
/// each datagram as it arrives and wakes the tasks waiting for one: nothing polls.
final class FakeNotifySocket: @unchecked Sendable {
    // @unchecked: `fd`, `address` and `source` are lets; datagrams are read only on the source's queue, and
    // what they feed goes into `received`, which has its own lock.
    let fd: Int32
    let address: String
    private let source: any DispatchSourceRead

    private struct Received: Sendable {
        var lines: [String] = []
        /// When each line arrived.
        var arrivals: [ContinuousClock.Instant] = []
    }

    private let received = Observed(Received())

    init(address: String) throws {
        self.address = address
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw PeerProcessError("socket failed") }
        var sockaddr = sockaddr_un()
        sockaddr.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(address.utf8)
        let abstract = bytes.first == UInt8(ascii: "@")
        if abstract { bytes[0] = 0 }
        withUnsafeMutableBytes(of: &sockaddr.sun_path) { $0.copyBytes(from: bytes) }
        let length = MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + bytes.count + (abstract ? 0 : 1)
        let fd = self.fd
        let result = withUnsafePointer(to: &sockaddr) { pointer in
            pointer.withMemoryRebound(to: Glibc.sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(length)) }
        }
        guard result == 0 else {
            close(fd)
            throw PeerProcessError("bind \(address): \(String(cString: strerror(errno)))")
        }
        source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: DispatchQueue(label: "fake-notify-socket"))
        source.setEventHandler { [weak self] in self?.drain() }
        source.resume()
    }

    /// Reads every datagram waiting (each may hold several `KEY=value` lines) and wakes whoever they satisfy.
    private func drain() {
        var buffer = [UInt8](repeating: 0, count: 4096)
        var lines: [String] = []
        while true {
            let count = recv(fd, &buffer, buffer.count, 0)
            guard count > 0 else { break }
            lines += String(decoding: buffer[0..<count], as: UTF8.self).split(separator: "\n").map(String.init)
        }
        let now = ContinuousClock.now
        let arrived = lines
        received.update { state in
            state.lines += arrived
            state.arrivals += arrived.map { _ in now }
        }
    }

    /// Every `KEY=value` line received so far, in order.
    var lines: [String] { received.value.lines }

    /// When each line equal to `line` arrived.
    func arrivals(of line: String) -> [ContinuousClock.Instant] {
        let state = received.value
        return zip(state.lines, state.arrivals).filter { $0.0 == line }.map(\.1)
    }

    /// Waits until a received line satisfies `predicate`.
    func waitFor(_ description: String, timeout: Duration = .seconds(10), _ predicate: @escaping @Sendable (String) -> Bool) async throws {
        try await waitForLines(description, timeout: timeout) { $0.contains(where: predicate) }
    }

    /// Waits until the lines received so far satisfy `predicate`.
    func waitForLines(_ description: String, timeout: Duration = .seconds(10), _ predicate: @escaping @Sendable ([String]) -> Bool) async throws {
        do {
            _ = try await received.wait(for: description, timeout: timeout) { predicate($0.lines) ? true : nil }
        } catch is TestTimeout {
            throw PeerProcessError("no \(description) on NOTIFY_SOCKET within \(timeout); got \(lines)")
        }
    }

    deinit {
        source.cancel()
        close(fd)
        if !address.hasPrefix("@") { unlink(address) }
    }
}
