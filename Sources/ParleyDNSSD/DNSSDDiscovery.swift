import Logging
public import ParleyDiscovery
internal import Synchronization

/// Zero-config discovery through the system's DNS-SD API, `dns_sd.h`: mDNSResponder on Apple platforms, and on
/// Linux avahi-daemon through Avahi's compatibility library (`libdns_sd`). Advertise one service, browse any number
/// of types, and receive merged found / updated / removed events.
///
/// ```swift
/// let discovery = DNSSDDiscovery(logger: logger)
/// try discovery.start()
/// try discovery.advertise(Advertisement(port: 7000, txt: .parley(peerID: id, displayName: "Ann", requiresSecret: false)))
/// discovery.browse(.debug)
/// for await event in discovery.events { … }
/// discovery.stop()
/// ```
///
/// Or by name, wherever a backend is chosen: `DiscoveryConfiguration(backend: .dnssd)`,
/// `.discover(backend: .dnssd)`.
///
/// If the daemon cannot be reached, `start` still succeeds: one warning is logged, `daemonUnavailable` is emitted,
/// and the backend tries again (after half a second, doubling to every 5 s) until it answers, then advertises and
/// browses again by itself. What Avahi's library does differently from Apple's, and how this backend makes up for
/// it, is in docs/discovery.md ("The dns_sd.h backend").
///
/// Threading: one thread of its own owns every `DNSServiceRef` (see `DNSSDLoop`); the public methods hand it
/// commands and return at once. Events are delivered through an `AsyncStream`.
public final class DNSSDDiscovery: DiscoveryBackend {
    /// Every event, in order. Single consumer; buffered without limit (events are rare and small).
    public let events: AsyncStream<DiscoveryEvent>

    private let continuation: AsyncStream<DiscoveryEvent>.Continuation
    private let logger: Logger
    private let state: Mutex<Lifecycle>

    private enum Lifecycle {
        /// Not started: what to do once started.
        case idle(DiscoveryWishes)
        case running(DNSSDLoop)
        case stopped
    }

    public init(logger: Logger) {
        self.logger = logger
        (events, continuation) = AsyncStream.makeStream(of: DiscoveryEvent.self, bufferingPolicy: .unbounded)
        state = Mutex(.idle(DiscoveryWishes()))
    }

    deinit {
        stop()
    }

    /// Starts the thread that talks to the daemon. Calling it again while running does nothing.
    /// - Throws: `DNSSDStartError` if the thread's wake-up pipe cannot be made, `DiscoveryError.stopped` after
    ///   `stop()`.
    public func start() throws {
        let continuation = self.continuation
        try state.withLock { (lifecycle: inout Lifecycle) throws in
            switch lifecycle {
            case .idle(let wishes):
                lifecycle = .running(try DNSSDLoop.start(wishes, logger: logger) { continuation.yield($0) })
            case .running: return
            case .stopped: throw DiscoveryError.stopped
            }
        }
    }

    /// Advertises `advertisement`, replacing any previous one (a change of TXT record alone is sent as an update,
    /// `DNSServiceUpdateRecord`). Before `start`, or while the daemon is away, it is kept and published as soon as
    /// possible. Success is reported as `.advertised(instanceName:)`, a taken name as `.renamed(from:to:)`, a
    /// refusal as `.advertisementFailed`.
    /// - Throws: `DiscoveryError` for an invalid name, subtype or TXT record.
    public func advertise(_ advertisement: Advertisement) throws {
        let subtypes = try advertisement.validated()
        try state.withLock { (lifecycle: inout Lifecycle) throws(DiscoveryError) in
            switch lifecycle {
            case .idle(var wishes):
                wishes.advertise(advertisement, subtypes: subtypes)
                lifecycle = .idle(wishes)
            case .running(let loop): loop.send(.advertise(advertisement, subtypes: subtypes))
            case .stopped: throw .stopped
            }
        }
    }

    /// Stops advertising (the daemon sends goodbye packets, so browsers see the service removed at once).
    public func withdraw() {
        state.withLock { lifecycle in
            switch lifecycle {
            case .idle(var wishes):
                wishes.withdraw()
                lifecycle = .idle(wishes)
            case .running(let loop): loop.send(.withdraw)
            case .stopped: break
            }
        }
    }

    /// Browses `type` in `domain` (nil: the local link) and resolves what it finds, until `stopBrowsing` or `stop`.
    /// Browsing the same type and domain twice is harmless.
    public func browse(_ type: ServiceType, domain: String?) {
        let scope = BrowseScope(type, domain: domain)
        state.withLock { lifecycle in
            switch lifecycle {
            case .idle(var wishes):
                wishes.browse(scope)
                lifecycle = .idle(wishes)
            case .running(let loop): loop.send(.browse(scope))
            case .stopped: break
            }
        }
    }

    /// Stops browsing `type` in `domain`; its known services are reported removed.
    public func stopBrowsing(_ type: ServiceType, domain: String?) {
        let scope = BrowseScope(type, domain: domain)
        state.withLock { lifecycle in
            switch lifecycle {
            case .idle(var wishes):
                wishes.stopBrowsing(scope)
                lifecycle = .idle(wishes)
            case .running(let loop): loop.send(.stopBrowsing(scope))
            case .stopped: break
            }
        }
    }

    /// Withdraws the advertisement, stops browsing, deallocates every reference, ends the thread and finishes
    /// `events`. Idempotent; also done on deinit.
    public func stop() {
        let running = state.withLock { lifecycle -> DNSSDLoop? in
            defer { lifecycle = .stopped }
            if case .running(let loop) = lifecycle { return loop }
            return nil
        }
        running?.stop()
        continuation.finish()
    }
}

extension DiscoveryBackendFactory {
    /// Discovery through the system's DNS-SD API (`dns_sd.h`): mDNSResponder on Apple platforms, avahi-daemon
    /// through Avahi's compatibility library on Linux.
    public static var dnssd: DiscoveryBackendFactory {
        DiscoveryBackendFactory(name: "dnssd") { logger in DNSSDDiscovery(logger: logger) }
    }
}
