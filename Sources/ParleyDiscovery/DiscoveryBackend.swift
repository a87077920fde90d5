import Logging

/// What Parley needs from a DNS-SD implementation: advertise one service, browse types, and report what it sees
/// as ``DiscoveryEvent``s. The transceiver's `DiscoveryCoordinator` is written against this protocol only, so the
/// `Parley` library links no C discovery library; `ParleyAvahi` implements it with avahi-daemon's client library,
/// `ParleyDNSSD` with the system's `dns_sd.h` (mDNSResponder on Apple platforms), and tests drive the coordinator
/// with a scripted backend.
///
/// A backend is started once and stopped once. Calls may come from any thread; events are delivered in order on
/// ``events`` (one consumer). A backend that cannot reach its daemon still starts: it reports
/// ``DiscoveryEvent/daemonUnavailable(_:)`` and resumes by itself when the daemon appears.
public protocol DiscoveryBackend: AnyObject, Sendable {
    /// Every event, in order; finishes after ``stop()``.
    var events: AsyncStream<DiscoveryEvent> { get }
    /// Begins talking to the daemon. Throws only when the backend itself cannot run (not for a missing daemon).
    func start() throws
    /// Advertises `advertisement`, replacing any previous one. Kept and published as soon as possible if the daemon
    /// is away. Throws ``DiscoveryError`` for a value the backend rejects before publishing.
    func advertise(_ advertisement: Advertisement) throws
    /// Stops advertising; browsers see the service removed.
    func withdraw()
    /// Browses `type` in `domain` (nil: the local link, `local`) and resolves what it finds, until
    /// ``stopBrowsing(_:domain:)`` or ``stop()``. A unicast DNS domain ("example.org") is browsed through the
    /// system's DNS servers (wide-area DNS-SD, RFC 6763).
    func browse(_ type: ServiceType, domain: String?)
    /// Stops browsing `type` in `domain`; its known services are reported removed.
    func stopBrowsing(_ type: ServiceType, domain: String?)
    /// Withdraws the advertisement, stops browsing and finishes ``events``. Idempotent. Returns without waiting
    /// for another server's answer (work that needs one goes on: ``finished()``).
    func stop()
    /// Returns once what ``stop()`` (or ``withdraw()``) set going has ended: records it removes from a DNS server
    /// are removed, or the server did not answer in time. A transceiver waits for it before its run ends, so a
    /// process that exits once stopped leaves nothing registered; its peers meanwhile are told at once.
    func finished() async
}

extension DiscoveryBackend {
    /// A backend whose stop is complete when it returns has nothing to wait for.
    public func finished() async {}
    /// Browses `type` on the local link.
    public func browse(_ type: ServiceType) { browse(type, domain: nil) }
    /// Stops browsing `type` on the local link.
    public func stopBrowsing(_ type: ServiceType) { stopBrowsing(type, domain: nil) }
}

/// Makes the backend a transceiver uses each time it runs: `DiscoveryConfiguration(backend: .avahi)` with
/// `import ParleyAvahi`, or `.dnssd` with `import ParleyDNSSD`.
public struct DiscoveryBackendFactory: Sendable {
    /// Shown in logs and status ("avahi").
    public let name: String
    private let make: @Sendable (Logger) -> any DiscoveryBackend

    public init(name: String, make: @escaping @Sendable (Logger) -> any DiscoveryBackend) {
        self.name = name
        self.make = make
    }

    public func makeBackend(logger: Logger) -> any DiscoveryBackend { make(logger) }
}

/// Why an advertisement was not published, in terms that do not depend on the backend.
public struct AdvertisementFailure: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Reason: Sendable, Hashable {
        /// Another service holds the name and the backend could not pick an alternative.
        case nameCollision
        /// The daemon refused a value (name, type, TXT record).
        case rejected
        /// The daemon failed for a reason of its own (memory, D-Bus, state).
        case backendFailure
    }

    public var reason: Reason
    /// The backend's own words, for the log: the operation that failed and the daemon's message.
    public var detail: String

    public init(reason: Reason, detail: String) {
        self.reason = reason
        self.detail = detail
    }

    public var description: String {
        switch reason {
        case .nameCollision: "the service name is taken on the network (\(detail)); choose another instance name"
        case .rejected: "the discovery daemon rejected the advertisement (\(detail))"
        case .backendFailure: "the discovery daemon failed to advertise (\(detail)); check that it is healthy"
        }
    }
}
