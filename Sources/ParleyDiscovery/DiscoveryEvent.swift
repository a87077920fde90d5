/// What the discovery layer reports, in order, on a ``DiscoveryBackend``'s `events`.
public enum DiscoveryEvent: Sendable, Hashable {
    /// A browsed service resolved for the first time.
    case found(DiscoveredService)
    /// A known service changed: an address appeared or went, or its port, host name or TXT record changed.
    case updated(DiscoveredService)
    /// The service is no longer seen on any interface or protocol (or the daemon went away, see
    /// `daemonUnavailable`). Says nothing about an open connection to it: liveness is the transport's heartbeat.
    case removed(instanceName: String, type: ServiceType, domain: String)
    /// Our advertisement is established under this name.
    case advertised(instanceName: String)
    /// Our advertisement's name collided with another service and now uses the backend's alternative name.
    case renamed(from: String, to: String)
    /// The daemon rejected our advertisement; it stays withdrawn until `advertise` is called again.
    case advertisementFailed(AdvertisementFailure)
    /// avahi-daemon (or the system D-Bus) is not reachable; discovery is off until `daemonAvailable`. The reason
    /// says what is missing. Known services are reported `removed` right after this event.
    case daemonUnavailable(String)
    /// avahi-daemon is reachable (again); advertising and browsing resume by themselves.
    case daemonAvailable
}
