import Foundation
import Glibc
import NIOCore
import ParleyTestSupport
import ParleyWire

/// A blocking TCP socket for feeding a transceiver bytes no well-behaved peer would send.
final class RawSocket: Sendable {
    let fd: Int32

    /// Connects to 127.0.0.1:`port`, from `source` if given (any 127.x.y.z works on Linux: another "host").
    init(port: Int, from source: String? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            local.sin_addr.s_addr = inet_addr(source)
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0 else { throw RawSocketError("bind to \(source) failed: errno \(errno)") }
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else { throw RawSocketError("connect failed: errno \(errno)") }
    }

    private init(fd: Int32) { self.fd = fd }

    deinit { close(fd) }

    func write(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if written <= 0 { return }
            offset += written
        }
    }

    func write(_ frame: Frame) {
        var buffer = ByteBuffer()
        frame.write(to: &buffer)
        write(Array(buffer.readableBytesView))
    }

    func shutdownWrite() { shutdown(fd, Int32(SHUT_WR)) }

    /// Makes the coming close abortive (RST instead of FIN), as when a host dies mid-connection.
    func setAbortiveClose() {
        var option = linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
    }

    /// Reads until the peer closes the connection or `timeout` passes; returns the bytes and whether it closed.
    func readUntilClosed(timeout: TimeInterval = 5) -> (bytes: [UInt8], closed: Bool) {
        var result: [UInt8] = []
        let deadline = Date().addingTimeInterval(timeout)
        var buffer = [UInt8](repeating: 0, count: 65536)
        while Date() < deadline {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, Int32(max(1, deadline.timeIntervalSinceNow * 1000)))
            if ready <= 0 { continue }
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count < 0 && (errno == EINTR || errno == EAGAIN) { continue }
            if count <= 0 { return (result, true) }
            result += buffer[0..<count]
        }
        return (result, false)
    }

    /// Reads whatever frames arrive within `timeout` (or until close) and decodes them.
    func readFrames(timeout: TimeInterval = 5) throws -> (frames: [Frame], closed: Bool) {
        let (bytes, closed) = readUntilClosed(timeout: timeout)
        var buffer = ByteBuffer(bytes: bytes)
        var decoder = FrameDecoder()
        var frames: [Frame] = []
        while let frame = try decoder.decode(buffer: &buffer) { frames.append(frame) }
        return (frames, closed)
    }

    /// The blocking reads, each on a thread of its own, so that waiting never occupies one of the few threads
    /// of Swift's cooperative pool (which the transceivers under test need). Callers mostly wait for a close,
    /// which ends the read at once; the generous default only matters on a machine loaded by parallel tests.
    func frames(timeout: TimeInterval = 15) async throws -> (frames: [Frame], closed: Bool) {
        try await PeerProcess.offPool { try self.readFrames(timeout: timeout) }
    }

    func bytes(timeout: TimeInterval = 15) async throws -> (bytes: [UInt8], closed: Bool) {
        try await PeerProcess.offPool { self.readUntilClosed(timeout: timeout) }
    }

    /// A listening socket on 127.0.0.1 (any port) for playing the server side by hand.
    final class Listener: Sendable {
        let fd: Int32
        let port: Int

        init() throws {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            self.fd = fd
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Int32 in
                    guard bind(fd, pointer, length) == 0, listen(fd, 4) == 0 else { return -1 }
                    return getsockname(fd, pointer, &length)
                }
            }
            guard bound == 0 else {
                close(fd)
                throw RawSocketError("listen failed: errno \(errno)")
            }
            port = Int(UInt16(bigEndian: address.sin_port))
        }

        deinit { close(fd) }

        func accept() -> RawSocket { RawSocket(fd: Glibc.accept(fd, nil, nil)) }
    }
}

struct RawSocketError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A hello frame as a hand-written peer would send it.
func rawHello(minimum: UInt16 = 1, maximum: UInt16 = 1, json: String? = nil) -> Frame {
    let body = json ?? #"{"peerID":"\#(UUID().uuidString)","name":"raw","capabilities":[],"accepts":[]}"#
    return .hello(HelloFrame(minimumVersion: minimum, maximumVersion: maximum, body: ByteBuffer(string: body)))
}
