internal import CAvahi
import Logging
public import ParleyDiscovery
internal import Synchronization

/// Zero-config discovery through the system's avahi-daemon: advertise one service, browse any number of types, and
/// receive merged found / updated / removed events.
///
/// ```swift
/// let discovery = AvahiDiscovery(logger: logger)
/// try discovery.start()
/// try discovery.advertise(Advertisement(port: 7000, txt: .parley(peerID: id, displayName: "Ann", requiresSecret: false)))
/// discovery.browse(.debug)
/// for await event in discovery.events { … }
/// discovery.stop()
/// ```
///
/// If avahi-daemon is not running, `start` still succeeds: one warning is logged, `daemonUnavailable` is emitted, and
/// everything resumes by itself when the daemon appears (and again after a daemon restart).
///
/// Threading: one Avahi threaded poll runs every callback on its own thread; the public methods take the poll's lock
/// before touching any Avahi object. Do not call these methods from a thread Avahi is calling back on (nothing in the
/// public API does that: events are delivered through an `AsyncStream`).
public final class AvahiDiscovery: DiscoveryBackend {
    /// Every event, in order. Single consumer; buffered without limit (events are rare and small).
    public let events: AsyncStream<DiscoveryEvent>

    private let continuation: AsyncStream<DiscoveryEvent>.Continuation
    private let logger: Logger
    /// Lifecycle and the C objects. The `Mutex` orders start/stop/configuration calls from any thread; inside it,
    /// the session is only used with the Avahi poll lock held (see `Runtime.withPollLock`), because the poll thread
    /// uses the same session from callbacks without this mutex (Avahi holds the poll lock during callbacks).
    private let state: Mutex<Lifecycle>

    private enum Lifecycle {
        /// Not started: what to do once started.
        case idle(DiscoveryWishes)
        case running(Runtime)
        case stopped
    }

    /// The threaded poll and the session that lives on it.
    private final class Runtime {
        let poll: OpaquePointer
        let session: AvahiSession

        init(poll: OpaquePointer, session: AvahiSession) {
            self.poll = poll
            self.session = session
        }

        func withPollLock<T, E: Error>(_ body: (AvahiSession) throws(E) -> T) throws(E) -> T {
            avahi_threaded_poll_lock(poll)
            defer { avahi_threaded_poll_unlock(poll) }
            return try body(session)
        }
    }

    public init(logger: Logger) {
        self.logger = logger
        (events, continuation) = AsyncStream.makeStream(of: DiscoveryEvent.self, bufferingPolicy: .unbounded)
        state = Mutex(.idle(DiscoveryWishes()))
    }

    deinit {
        stop()
    }

    /// Starts the poll thread and connects to avahi-daemon (waiting for it if it is not running).
    /// Calling it again while running does nothing.
    /// - Throws: `AvahiError` if Avahi's event loop cannot be created, `DiscoveryError.stopped` after `stop()`.
    public func start() throws {
        try state.withLock { (lifecycle: inout Lifecycle) throws in
            guard case .idle(let wishes) = lifecycle else {
                if case .stopped = lifecycle { throw DiscoveryError.stopped }
                return
            }
            guard let poll = avahi_threaded_poll_new() else {
                throw AvahiError(AvahiError.Code.noMemory.rawValue, operation: "avahi_threaded_poll_new")
            }
            let session = AvahiSession(
                pollAPI: avahi_threaded_poll_get(poll), logger: logger, continuation: continuation)
            // The poll thread is not running yet: the session may be used without the lock.
            if let advertisement = wishes.advertisement {
                // Validated by `advertise`; the daemon is not connected yet so this cannot fail.
                try? session.setAdvertisement(advertisement, subtypes: wishes.subtypes)
            }
            for scope in wishes.browsed { session.browse(scope) }
            session.connect()
            let started = avahi_threaded_poll_start(poll)
            guard started >= 0 else {
                session.tearDown()
                avahi_threaded_poll_free(poll)
                throw AvahiError(started, operation: "avahi_threaded_poll_start")
            }
            lifecycle = .running(Runtime(poll: poll, session: session))
        }
    }

    /// Advertises `advertisement`, replacing any previous one (a change of TXT record alone is sent as an update).
    /// Before `start`, or while the daemon is away, it is kept and published as soon as possible.
    /// Success is reported as `.advertised(instanceName:)`, a collision as `.renamed(from:to:)`.
    /// - Throws: `DiscoveryError` for an invalid name, subtype or TXT record; `AvahiError` if the daemon rejects it.
    public func advertise(_ advertisement: Advertisement) throws {
        let subtypes = try advertisement.validated()
        try state.withLock { (lifecycle: inout Lifecycle) throws in
            switch lifecycle {
            case .idle(var wishes):
                wishes.advertise(advertisement, subtypes: subtypes)
                lifecycle = .idle(wishes)
            case .running(let runtime):
                try runtime.withPollLock { (session) throws(AvahiError) in
                    try session.setAdvertisement(advertisement, subtypes: subtypes)
                }
            case .stopped:
                throw DiscoveryError.stopped
            }
        }
    }

    /// Stops advertising (Avahi sends goodbye packets, so browsers see the service removed at once).
    public func withdraw() {
        state.withLock { lifecycle in
            switch lifecycle {
            case .idle(var wishes):
                wishes.withdraw()
                lifecycle = .idle(wishes)
            case .running(let runtime): runtime.withPollLock { $0.clearAdvertisement() }
            case .stopped: break
            }
        }
    }

    /// Browses `type` in `domain` (nil: the local link; a unicast DNS domain for wide-area DNS-SD, which needs
    /// `enable-wide-area=yes` in avahi-daemon.conf and a DNS server in /etc/resolv.conf) and resolves what it finds,
    /// until `stopBrowsing` or `stop`. Browsing the same type and domain twice is harmless.
    public func browse(_ type: ServiceType, domain: String?) {
        let scope = BrowseScope(type, domain: domain)
        state.withLock { lifecycle in
            switch lifecycle {
            case .idle(var wishes):
                wishes.browse(scope)
                lifecycle = .idle(wishes)
            case .running(let runtime): runtime.withPollLock { $0.browse(scope) }
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
            case .running(let runtime): runtime.withPollLock { $0.stopBrowsing(scope) }
            case .stopped: break
            }
        }
    }

    /// Withdraws the advertisement, stops browsing, frees every Avahi object and the poll thread, and finishes
    /// `events`. Idempotent; also done on deinit.
    public func stop() {
        state.withLock { lifecycle in
            if case .running(let runtime) = lifecycle {
                // Join the poll thread first: after this no callback can run, so the session needs no lock.
                avahi_threaded_poll_stop(runtime.poll)
                runtime.session.tearDown()
                avahi_threaded_poll_free(runtime.poll)
            }
            lifecycle = .stopped
        }
        continuation.finish()
    }
}
