import Foundation

/// A TCP port nothing is bound to right now, for a test that hands it to a server started later (a parleyd whose
/// port comes from its configuration, a debugger that appears after its app). Picked at random below Linux's
/// ephemeral range (32768–60999): the kernel hands ports in that range to every `port 0` listener and outgoing
/// connection of the tests running in parallel, so a port taken from it can be gone by the time the server binds.
public func unusedPort() throws -> Int {
    for _ in 0..<100 {
        let port = Int.random(in: 20_000..<32_000)
        if canBind(port) { return port }
    }
    throw PeerProcessError("no unused port found in 20000–31999")
}

/// Whether `port` can be bound on every address (IPv6 and IPv4), as parleyd binds it.
private func canBind(_ port: Int) -> Bool {
    let fd = socket(AF_INET6, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var off: Int32 = 0
    setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &off, socklen_t(MemoryLayout<Int32>.size))
    var address = sockaddr_in6()
    address.sin6_family = sa_family_t(AF_INET6)
    address.sin6_port = UInt16(port).bigEndian
    address.sin6_addr = in6addr_any
    return withUnsafePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) == 0 }
    }
}
