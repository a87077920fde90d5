import Logging

/// Whether a backend's daemon was last seen reachable, and what to say when that changes: one warning when it goes
/// (worded for the first report or a later loss), one info line when it is back, and the event for each change.
/// Every backend says it the same way, so that operators and the lab tests read one set of lines.
package struct DaemonPresence: Sendable {
    /// The daemon as people know it ("avahi-daemon", "mDNSResponder").
    package let daemonName: String
    /// nil until the first state is known; then whether the daemon was last reported available.
    package private(set) var isAvailable: Bool?

    package init(daemonName: String) {
        self.daemonName = daemonName
    }

    /// The daemon answers: `.daemonAvailable` the first time and after each loss, else nil.
    package mutating func available(logger: Logger, metadata: Logger.Metadata = [:]) -> DiscoveryEvent? {
        guard isAvailable != true else { return nil }
        isAvailable = true
        logger.info("\(daemonName) is available; advertising and browsing", metadata: metadata)
        return .daemonAvailable
    }

    /// The daemon cannot be reached, for `reason`: `.daemonUnavailable` once per outage, else nil.
    package mutating func unavailable(_ reason: String, logger: Logger) -> DiscoveryEvent? {
        guard isAvailable != false else { return nil }
        if isAvailable == nil {
            logger.warning(
                "LAN discovery is off: \(reason). Parley keeps running, discovery starts by itself when \(daemonName) comes back, and static peers still work."
            )
        } else {
            logger.warning(
                "LAN discovery paused: \(reason). It will re-advertise and re-browse by itself when \(daemonName) is back; static peers and open connections are unaffected."
            )
        }
        isAvailable = false
        return .daemonUnavailable(reason)
    }
}
