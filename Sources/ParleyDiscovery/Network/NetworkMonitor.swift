import Dispatch
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
#if canImport(Network)
import Network
#endif

/// Tells when the machine's interfaces or addresses change: a link going down or up, an address added or
/// removed (Wi-Fi roaming, DHCP, a laptop waking). The kernel says *that* something changed through a netlink
/// socket (`RTMGRP_LINK` and the address groups); what changed is read afresh with `getifaddrs`, so a burst of
/// kernel messages becomes one new ``NetworkSnapshot`` and nothing depends on parsing netlink records.
///
/// On Apple platforms Network.framework's `NWPathMonitor` says that something changed instead. Without either (a
/// netlink socket refused) the monitor still answers ``current`` once and reports no changes; that is logged once.
public final class NetworkMonitor: Sendable {
    private struct State {
        var current: NetworkSnapshot
        var subscribers: [Int: AsyncStream<NetworkSnapshot>.Continuation] = [:]
        var nextSubscriber = 0
        var stopped = false
    }

    private let state: Mutex<State>
    private let source: Mutex<(any DispatchSourceRead)?>
    #if canImport(Network)
    private let pathMonitor = Mutex<NWPathMonitor?>(nil)
    #endif
    private let logger: Logger

    public init(logger: Logger) {
        self.logger = logger
        state = Mutex(State(current: .current()))
        source = Mutex(nil)
        start()
    }

    deinit { stop() }

    /// A monitor whose first snapshot was read off Swift's cooperative pool (see ``kernelNetworkCall(_:)``):
    /// what async code should use instead of `init`.
    public static func started(logger: Logger) async -> NetworkMonitor {
        // Nothing in init throws.
        try! await kernelNetworkCall { NetworkMonitor(logger: logger) }
    }

    /// The interfaces as last read.
    public var current: NetworkSnapshot { state.withLock { $0.current } }

    /// Every new snapshot from now on, until ``stop()``. Each call is a subscription of its own.
    public func changes() -> AsyncStream<NetworkSnapshot> {
        let (stream, continuation) = AsyncStream.makeStream(of: NetworkSnapshot.self, bufferingPolicy: .bufferingNewest(1))
        let id = state.withLock { state -> Int? in
            guard !state.stopped else { return nil }
            defer { state.nextSubscriber += 1 }
            state.subscribers[state.nextSubscriber] = continuation
            return state.nextSubscriber
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.subscribers.removeValue(forKey: id) }
        }
        return stream
    }

    /// Closes the netlink socket and finishes every subscription. Idempotent.
    public func stop() {
        let subscribers = state.withLock { state in
            defer { state.subscribers.removeAll() }
            state.stopped = true
            return Array(state.subscribers.values)
        }
        source.withLock { source in
            source?.cancel()
            source = nil
        }
        #if canImport(Network)
        pathMonitor.withLock { monitor in
            monitor?.cancel()
            monitor = nil
        }
        #endif
        for subscriber in subscribers { subscriber.finish() }
    }

    /// Reads the interfaces again now and reports them if they changed (also what a netlink wake-up does).
    public func refresh() {
        let snapshot = NetworkSnapshot.current()
        let subscribers = state.withLock { state -> [AsyncStream<NetworkSnapshot>.Continuation] in
            guard !state.stopped, snapshot != state.current else { return [] }
            state.current = snapshot
            return Array(state.subscribers.values)
        }
        for subscriber in subscribers { subscriber.yield(snapshot) }
    }

    private func start() {
        #if os(Linux)
        let fd = socket(AF_NETLINK, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), Netlink.route)
        guard fd >= 0 else {
            logger.warning("cannot watch the network for changes (netlink socket: \(Self.lastError)); interface changes are noticed only by timeouts")
            return
        }
        var address = Netlink.SocketAddress(groups: Netlink.linkGroup | Netlink.ipv4AddressGroup | Netlink.ipv6AddressGroup)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<Netlink.SocketAddress>.size)) }
        }
        guard bound == 0 else {
            logger.warning("cannot watch the network for changes (netlink bind: \(Self.lastError)); interface changes are noticed only by timeouts")
            close(fd)
            return
        }
        // Made inside the lock so that the (non-Sendable) source never leaves it.
        source.withLock { source in
            let reader = DispatchSource.makeReadSource(fileDescriptor: fd, queue: DispatchQueue(label: "parley.network-monitor"))
            reader.setEventHandler { [weak self] in
                // Drain every pending message; their content does not matter, only that something changed.
                var buffer = [UInt8](repeating: 0, count: 16_384)
                while recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT)) > 0 {}
                self?.refresh()
            }
            reader.setCancelHandler { close(fd) }
            reader.resume()
            source = reader
        }
        #elseif canImport(Network)
        // Made inside the lock, as the netlink source is: the monitor never leaves it.
        pathMonitor.withLock { monitor in
            let watcher = NWPathMonitor()
            watcher.pathUpdateHandler = { [weak self] _ in self?.refresh() }
            watcher.start(queue: DispatchQueue(label: "parley.network-monitor"))
            monitor = watcher
        }
        #endif
    }

    private static var lastError: String { String(cString: strerror(errno)) }
}

#if os(Linux)
/// The few netlink definitions the monitor needs, from <linux/netlink.h> and <linux/rtnetlink.h>, which Swift's
/// Glibc module does not import. They are the kernel's stable user-space ABI.
enum Netlink {
    static let route: Int32 = 0  // NETLINK_ROUTE
    static let linkGroup: UInt32 = 0x1  // RTMGRP_LINK
    static let ipv4AddressGroup: UInt32 = 0x10  // RTMGRP_IPV4_IFADDR
    static let ipv6AddressGroup: UInt32 = 0x100  // RTMGRP_IPV6_IFADDR

    /// `struct sockaddr_nl`: family, padding, port id (0: the kernel assigns one), multicast groups.
    struct SocketAddress {
        var family = sa_family_t(AF_NETLINK)
        var pad: UInt16 = 0
        var portID: UInt32 = 0
        var groups: UInt32

        init(groups: UInt32) { self.groups = groups }
    }
}
#endif
