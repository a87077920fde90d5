import ParleyBlocking

/// Runs a call that asks the kernel's routing tables (`getifaddrs`, `getaddrinfo`, which glibc follows with a
/// netlink dump of every address) on a thread that is neither Swift's cooperative pool nor an event loop.
///
/// Such a call waits for the kernel's network lock, which is held while interfaces or network namespaces are
/// created or removed; on a busy host (containers starting, a VPN reconnecting, the test labs) that was measured
/// at more than a second. On a two-core machine the cooperative pool has two threads: two such calls on it
/// stalled every task of the process, and handshakes elsewhere missed their deadlines.
public func kernelNetworkCall<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await kernelNetworkCalls.run(body)
}

/// One thread: these calls are short when the kernel is not busy, and when it is, more threads would only wait for
/// the same lock (and would take the shared pool's threads from other blocking work meanwhile).
private let kernelNetworkCalls = BlockingPool.serial()
