import Logging
import ParleyDiscovery

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// What the DNS-SD backend does, as decisions over `dns_sd.h`'s replies: what to register, browse, resolve and query,
/// how to merge the answers into events, renaming, and reconnecting when the daemon goes away. It makes no C call
/// itself (``DNSSDDriver`` does), so its tests run without a daemon.
///
/// Confinement: created, used and dropped on the loop's thread only; not `Sendable`.
final class DNSSDSession {
    enum Command: Sendable {
        case advertise(Advertisement, subtypes: [String])
        case withdraw
        case browse(BrowseScope)
        case stopBrowsing(BrowseScope)
    }

    #if os(Linux)
    static let daemonName = "avahi-daemon"
    /// Avahi's compatibility library answers `kDNSServiceErr_Unknown` whether the daemon is missing or the system bus
    /// is: the reason names both.
    static let unreachable = "is not running or not reachable over the system D-Bus"
    #else
    static let daemonName = "mDNSResponder"
    static let unreachable = "is not running"
    #endif

    private let driver: any DNSSDDriver
    private let logger: Logger
    private let emit: (DiscoveryEvent) -> Void
    private let naming: AlternativeName.Style
    private var presence = DaemonPresence(daemonName: DNSSDSession.daemonName)
    private var wishes = DiscoveryWishes()

    /// What is known of the daemon: nothing yet (or nothing was asked since it went), it answered, or it did not
    /// and a retry is scheduled.
    private enum Link {
        case unknown
        case up
        case down(failures: Int)
    }
    private var link = Link.unknown

    /// Why each operation was started.
    enum Purpose {
        case registration
        case browser(BrowseScope)
        case resolver(SlotKey)
        case addressQuery(SlotKey, ResolvedAddress.Family)
    }
    private var purposes: [DNSSDOperationID: Purpose] = [:]

    // Advertising.
    /// The name in use (differs from the advertisement's after a rename); kept across daemon restarts.
    private var currentName: String?
    /// One registration per interface the advertisement names, or one for every interface.
    private var registrations: [DNSSDOperationID] = []
    /// Registrations whose callback has not said "established" yet.
    private var unconfirmed: Set<DNSSDOperationID> = []
    /// What the registrations hold (to update only the TXT record when nothing else changed).
    private var published: Advertisement?

    // Browsing.
    private var browsers: [BrowseScope: DNSSDOperationID] = [:]

    /// `dns_sd.h` reports a service once per interface (Avahi's compatibility library once per interface and mDNS
    /// protocol, so the same interface may come twice): one slot per (service, interface), resolved there.
    struct SlotKey: Hashable {
        var service: ServiceKey
        var interfaceIndex: UInt32
    }
    private struct Slot {
        /// Additions minus removals the browser reported for this slot.
        var sightings = 0
        /// The domain as the browser reported it, which is what `DNSServiceResolve` wants back.
        var browsedDomain: String
        var resolver: DNSSDOperationID?
        /// The host the service runs on, as `DNSServiceResolve` gave it ("hosta.local."); nil until resolved.
        var hostTarget: String?
        var port: UInt16 = 0
        var txt = TXTRecord()
        var queries: [ResolvedAddress.Family: DNSSDOperationID] = [:]
        /// Each address with the number of times it was reported added and not yet removed (Avahi's library
        /// reports an address once per mDNS protocol).
        var addresses: [ResolvedAddress: Int] = [:]
    }
    private var slots: [SlotKey: Slot] = [:]
    private var merge = ServiceMergeState<UInt32>()

    init(driver: any DNSSDDriver, logger: Logger, naming: AlternativeName.Style = .platform, emit: @escaping (DiscoveryEvent) -> Void) {
        self.driver = driver
        self.logger = logger
        self.naming = naming
        self.emit = emit
    }

    /// The delay before the `failures`-th attempt to reach the daemon again: half a second, doubling, at most 5 s.
    static func retryDelay(afterFailures failures: Int) -> Duration {
        let halfSeconds = 1 << min(max(failures - 1, 0), 4)
        return min(.milliseconds(500 * halfSeconds), .seconds(5))
    }

    // MARK: - Commands

    func apply(_ command: Command) {
        switch command {
        case .advertise(let advertisement, let subtypes): advertise(advertisement, subtypes: subtypes)
        case .withdraw: withdraw()
        case .browse(let scope): browse(scope)
        case .stopBrowsing(let scope): stopBrowsing(scope)
        }
    }

    /// Ends every operation (registrations are withdrawn by the daemon). Nothing is emitted.
    func shutdown() {
        cancelEverything()
    }

    /// The scheduled retry is due: try everything wished for again.
    func retryDue() {
        guard case .down = link else { return }
        guard !wishes.isEmpty else {
            // Nothing to ask the daemon: the next wish tries at once.
            link = .unknown
            return
        }
        for scope in wishes.browsed where browsers[scope] == nil {
            guard startBrowser(scope) else { return }
        }
        if wishes.advertisement != nil, published == nil { publish() }
    }

    /// Whether operations are started now; while the daemon is away, the retry starts them.
    private var tryingNow: Bool {
        if case .down = link { return false }
        return true
    }

    // MARK: - Advertising

    private func advertise(_ advertisement: Advertisement, subtypes: [String]) {
        let previous = wishes.advertisement
        wishes.advertise(advertisement, subtypes: subtypes)
        if previous?.instanceName != advertisement.instanceName { currentName = nil }
        guard tryingNow else { return }
        if let published, !registrations.isEmpty, published.type == advertisement.type,
            published.port == advertisement.port, published.subtypes == advertisement.subtypes,
            published.instanceName == advertisement.instanceName,
            published.interfaceIndices == advertisement.interfaceIndices
        {
            guard published.txt != advertisement.txt else { return }
            updateTXT(advertisement)
            return
        }
        publish()
    }

    private func withdraw() {
        wishes.withdraw()
        currentName = nil
        if !registrations.isEmpty { logger.info("advertisement withdrawn") }
        unpublish()
    }

    /// Sends a new TXT record alone, so that browsers see an update instead of a removal and a new service.
    private func updateTXT(_ advertisement: Advertisement) {
        let txt = advertisement.txt.dnssdBytes
        for registration in registrations {
            do {
                try driver.updateTXT(of: registration, to: txt)
            } catch {
                if Self.meansDaemonUnreachable(error.code, creating: false, .registration) {
                    daemonLost(reason: lostReason(error))
                    return
                }
                // The daemon would not update the record in place: register the service again instead.
                logger.debug("cannot update the TXT record; registering again", metadata: ["error": "\(error)"])
                publish()
                return
            }
        }
        published = advertisement
    }

    /// (Re)registers the advertisement, taking the next name for as long as `dns_sd.h` answers that it is taken.
    private func publish() {
        unpublish()
        guard let advertisement = wishes.advertisement else { return }
        if advertisement.interfaceIndices?.isEmpty == true {
            // No interface the filter admits is up: nothing to publish until one is.
            published = advertisement
            logger.info("not advertising: no usable network interface is up", metadata: ["name": "\(advertisement.instanceName)"])
            return
        }
        var name = currentName ?? advertisement.instanceName
        for _ in 0..<100 {
            do {
                try registerEverywhere(advertisement, as: name)
                currentName = name
                published = advertisement
                daemonAnswered()
                logger.debug(
                    "advertisement submitted",
                    metadata: ["name": "\(name)", "type": "\(advertisement.type)", "port": "\(advertisement.port)"])
                return
            } catch where error.code == .nameConflict {
                name = rename(from: name)
            } catch {
                if Self.meansDaemonUnreachable(error.code, creating: true, .registration) {
                    daemonLost(reason: unreachableReason(error))
                } else {
                    advertisementFailed(error)
                }
                return
            }
        }
        advertisementFailed(DNSSDError(code: .nameConflict, operation: "choosing a free instance name"))
    }

    /// One registration per interface (or one for all); on an error, those made are cancelled.
    private func registerEverywhere(_ advertisement: Advertisement, as name: String) throws(DNSSDError) {
        let labels = wishes.subtypes.map { String($0.prefix { $0 != "." }) }
        let request = RegistrationRequest(
            name: name, registrationType: ([advertisement.type.rawValue] + labels).joined(separator: ","),
            interfaceIndex: 0, port: advertisement.port, txt: advertisement.txt.dnssdBytes)
        for interface in advertisement.interfaceIndices?.map({ UInt32(bitPattern: $0) }) ?? [0] {
            var onInterface = request
            onInterface.interfaceIndex = interface
            do {
                let registration = try driver.register(onInterface)
                purposes[registration] = .registration
                registrations.append(registration)
                unconfirmed.insert(registration)
            } catch {
                unpublish()
                throw error
            }
        }
    }

    private func unpublish() {
        for registration in registrations {
            purposes[registration] = nil
            driver.cancel(registration)
        }
        registrations = []
        unconfirmed = []
        published = nil
    }

    /// The next name after `name`, reported and logged.
    private func rename(from name: String) -> String {
        let next = AlternativeName.next(after: name, style: naming)
        logger.info(
            "advertised name is taken on the network; using the alternative name",
            metadata: ["from": "\(name)", "to": "\(next)"])
        emit(.renamed(from: name, to: next))
        return next
    }

    private func registered(_ registration: DNSSDOperationID, as name: String) {
        let requested = currentName ?? name
        let renamedByDaemon = name != requested
        if renamedByDaemon {
            // Avahi's library renames by itself when another host holds the name (Apple's mDNSResponder in every
            // case): the callback carries the name in use.
            logger.info(
                "advertised name is taken on the network; \(Self.daemonName) chose the alternative name",
                metadata: ["from": "\(requested)", "to": "\(name)"])
            emit(.renamed(from: requested, to: name))
            currentName = name
        }
        let wasPending = unconfirmed.remove(registration) != nil
        guard unconfirmed.isEmpty, wasPending || renamedByDaemon else { return }
        logger.info(
            "advertising on the LAN",
            metadata: [
                "name": "\(name)", "type": "\(published?.type.rawValue ?? "")", "port": "\(published?.port ?? 0)",
            ])
        emit(.advertised(instanceName: name))
    }

    private func registrationFailed(_ code: DNSSDError.Code) {
        let error = DNSSDError(code: code, operation: "DNSServiceRegister")
        if code == .nameConflict, let advertisement = wishes.advertisement {
            // Another service on this host took the name (Avahi's library does not rename then).
            currentName = rename(from: currentName ?? advertisement.instanceName)
            publish()
        } else if Self.meansDaemonUnreachable(code, creating: false, .registration) {
            daemonLost(reason: lostReason(error))
        } else {
            advertisementFailed(error)
        }
    }

    private func advertisementFailed(_ error: DNSSDError) {
        logger.error("advertisement failed; it stays withdrawn", metadata: ["error": "\(error)"])
        unpublish()
        wishes.withdraw()
        currentName = nil
        emit(.advertisementFailed(AdvertisementFailure(error)))
    }

    // MARK: - Browsing

    private func browse(_ scope: BrowseScope) {
        guard wishes.browse(scope), tryingNow else { return }
        startBrowser(scope)
    }

    private func stopBrowsing(_ scope: BrowseScope) {
        wishes.stopBrowsing(scope)
        if let browser = browsers.removeValue(forKey: scope) {
            purposes[browser] = nil
            driver.cancel(browser)
        }
        for key in slots.keys where key.service.type == scope.type && sameDomain(key.service.domain, scope.domain) {
            dropSlot(key)
        }
        emit(merge.removeAll(ofType: scope.type, domain: scope.domain))
    }

    /// Starts browsing `scope`; false if that found the daemon gone (everything was reset then).
    @discardableResult
    private func startBrowser(_ scope: BrowseScope) -> Bool {
        do {
            let browser = try driver.browse(type: scope.type.rawValue, domain: scope.domain)
            purposes[browser] = .browser(scope)
            browsers[scope] = browser
            daemonAnswered()
            logger.debug("browsing", metadata: ["type": "\(scope.type)", "domain": "\(scope.domain)"])
            return true
        } catch {
            if Self.meansDaemonUnreachable(error.code, creating: true, .browser(scope)) {
                daemonLost(reason: unreachableReason(error))
                return false
            }
            logger.error("cannot browse", metadata: ["type": "\(scope.type)", "domain": "\(scope.domain)", "error": "\(error)"])
            return true
        }
    }

    private func browsed(_ scope: BrowseScope, added: Bool, interfaceIndex: UInt32, name: String, domain: String) {
        let service = ServiceKey(instanceName: name, type: scope.type, domain: withoutFinalDot(domain))
        let key = SlotKey(service: service, interfaceIndex: interfaceIndex)
        if added {
            slots[key, default: Slot(browsedDomain: domain)].sightings += 1
            guard slots[key]?.sightings == 1 else { return }
            merge.appeared(service, on: interfaceIndex)
            startResolver(key)
        } else {
            guard let sightings = slots[key]?.sightings else { return }
            if sightings > 1 {
                slots[key]?.sightings = sightings - 1
                return
            }
            dropSlot(key)
            emit(merge.disappeared(service, on: interfaceIndex))
        }
    }

    private func browserFailed(_ scope: BrowseScope, _ code: DNSSDError.Code) {
        let error = DNSSDError(code: code, operation: "DNSServiceBrowse")
        if Self.meansDaemonUnreachable(code, creating: false, .browser(scope)) {
            daemonLost(reason: lostReason(error))
            return
        }
        logger.warning("browsing failed", metadata: ["type": "\(scope.type)", "domain": "\(scope.domain)", "error": "\(error)"])
        if let browser = browsers.removeValue(forKey: scope) {
            purposes[browser] = nil
            driver.cancel(browser)
        }
    }

    // MARK: - Resolving

    /// Avahi reports wide-area results on "any interface" (-1), which `dns_sd.h` reads as its local-only index and
    /// Avahi's library then refuses: ask on every interface instead.
    private static func lookupInterface(_ index: UInt32) -> UInt32 { index == UInt32.max ? 0 : index }

    private func startResolver(_ key: SlotKey) {
        guard let slot = slots[key] else { return }
        do {
            let resolver = try driver.resolve(
                name: key.service.instanceName, type: key.service.type.rawValue, domain: slot.browsedDomain,
                interfaceIndex: Self.lookupInterface(key.interfaceIndex))
            purposes[resolver] = .resolver(key)
            slots[key]?.resolver = resolver
        } catch {
            if Self.meansDaemonUnreachable(error.code, creating: true, .resolver(key)) {
                daemonLost(reason: unreachableReason(error))
                return
            }
            logger.debug("cannot resolve", metadata: ["name": "\(key.service.instanceName)", "error": "\(error)"])
        }
    }

    private func resolved(_ key: SlotKey, hostTarget: String, port: UInt16, txt: [[UInt8]]) {
        guard var slot = slots[key] else { return }
        slot.port = port
        slot.txt = TXTRecord(strings: txt)
        let hostChanged = slot.hostTarget != hostTarget
        if hostChanged {
            for query in slot.queries.values { purposes[query] = nil; driver.cancel(query) }
            slot.queries = [:]
            slot.addresses = [:]
            slot.hostTarget = hostTarget
        }
        slots[key] = slot
        report(key)
        if hostChanged {
            for family in [ResolvedAddress.Family.ipv4, .ipv6] where slots[key] != nil {
                startQuery(key, family)
            }
        }
    }

    private func resolverFailed(_ key: SlotKey, _ code: DNSSDError.Code) {
        let error = DNSSDError(code: code, operation: "DNSServiceResolve")
        if Self.meansDaemonUnreachable(code, creating: false, .resolver(key)) {
            daemonLost(reason: lostReason(error))
            return
        }
        logger.debug("resolving failed", metadata: ["name": "\(key.service.instanceName)", "error": "\(error)"])
        if let resolver = slots[key]?.resolver {
            purposes[resolver] = nil
            driver.cancel(resolver)
            slots[key]?.resolver = nil
        }
        emit(merge.resolutionFailed(key.service, on: key.interfaceIndex))
    }

    private func startQuery(_ key: SlotKey, _ family: ResolvedAddress.Family) {
        guard let host = slots[key]?.hostTarget else { return }
        do {
            let query = try driver.queryAddresses(of: host, family: family, interfaceIndex: Self.lookupInterface(key.interfaceIndex))
            purposes[query] = .addressQuery(key, family)
            slots[key]?.queries[family] = query
        } catch {
            if Self.meansDaemonUnreachable(error.code, creating: true, .addressQuery(key, family)) {
                daemonLost(reason: unreachableReason(error))
                return
            }
            logger.debug("cannot query addresses", metadata: ["host": "\(host)", "error": "\(error)"])
        }
    }

    private func address(
        _ key: SlotKey, added: Bool, interfaceIndex: UInt32, family: ResolvedAddress.Family, bytes: [UInt8]
    ) {
        let interface = interfaceIndex != 0 ? interfaceIndex : key.interfaceIndex
        guard slots[key] != nil,
            let address = Self.resolvedAddress(family, bytes, interfaceIndex: interface, interfaceName: driver.interfaceName(interface))
        else { return }
        if added {
            slots[key]?.addresses[address, default: 0] += 1
        } else if let count = slots[key]?.addresses[address] {
            slots[key]?.addresses[address] = count > 1 ? count - 1 : nil
        }
        report(key)
    }

    private func queryFailed(_ key: SlotKey, _ family: ResolvedAddress.Family, _ code: DNSSDError.Code) {
        let error = DNSSDError(code: code, operation: "DNSServiceQueryRecord")
        if Self.meansDaemonUnreachable(code, creating: false, .addressQuery(key, family)) {
            daemonLost(reason: lostReason(error))
            return
        }
        logger.debug("address query failed", metadata: ["host": "\(slots[key]?.hostTarget ?? "")", "error": "\(error)"])
        if let query = slots[key]?.queries.removeValue(forKey: family) {
            purposes[query] = nil
            driver.cancel(query)
        }
    }

    /// Tells the merge what the slot knows now: resolved with its addresses, or nothing usable.
    private func report(_ key: SlotKey) {
        guard let slot = slots[key] else { return }
        if let host = slot.hostTarget, !slot.addresses.isEmpty {
            let resolution = ServiceResolution(
                hostName: withoutFinalDot(host), addresses: slot.addresses.keys.sorted(), port: slot.port, txt: slot.txt)
            emit(merge.resolved(key.service, on: key.interfaceIndex, resolution))
        } else {
            emit(merge.resolutionFailed(key.service, on: key.interfaceIndex))
        }
    }

    private func dropSlot(_ key: SlotKey) {
        guard let slot = slots.removeValue(forKey: key) else { return }
        for operation in [slot.resolver].compactMap({ $0 }) + Array(slot.queries.values) {
            purposes[operation] = nil
            driver.cancel(operation)
        }
    }

    // MARK: - Replies

    func handle(_ reply: DNSSDReply, from operation: DNSSDOperationID) {
        // An operation cancelled meanwhile (by an earlier reply of the same turn) says nothing any more.
        guard let purpose = purposes[operation] else { return }
        switch (purpose, reply) {
        case (.registration, .registered(let name)): registered(operation, as: name)
        case (.registration, .failed(let code)): registrationFailed(code)
        case (.browser(let scope), .browsed(let added, let interface, let name, let domain)):
            browsed(scope, added: added, interfaceIndex: interface, name: name, domain: domain)
        case (.browser(let scope), .failed(let code)): browserFailed(scope, code)
        case (.resolver(let key), .resolved(_, let host, let port, let txt)):
            resolved(key, hostTarget: host, port: port, txt: txt)
        case (.resolver(let key), .failed(let code)): resolverFailed(key, code)
        case (.addressQuery(let key, let family), .address(let added, let interface, let replyFamily, let bytes)) where family == replyFamily:
            address(key, added: added, interfaceIndex: interface, family: family, bytes: bytes)
        case (.addressQuery(let key, let family), .failed(let code)): queryFailed(key, family, code)
        default:
            logger.debug("ignoring an unexpected dns_sd reply", metadata: ["operation": "\(operation)", "reply": "\(reply)"])
        }
    }

    // MARK: - The daemon

    /// Whether `code` says the daemon is out of reach, rather than that one request failed. Apple's library has codes
    /// for it. Avahi's answers `unknown` when it cannot make its client (creating any operation: no daemon, no
    /// bus) and when a client fails later (the daemon went away); but it also answers `unknown` when a resolver or
    /// record browser times out, so later `unknown`s count only from registrations and browsers, which time out
    /// never. A browser's or registration's `unknown` for another reason costs a reconnection, not discovery.
    static func meansDaemonUnreachable(_ code: DNSSDError.Code, creating: Bool, _ purpose: Purpose) -> Bool {
        switch code {
        case .serviceNotRunning, .defunctConnection: return true
        case .unknown:
            if creating { return true }
            switch purpose {
            case .registration, .browser: return true
            case .resolver, .addressQuery: return false
            }
        default: return false
        }
    }

    private func unreachableReason(_ error: DNSSDError) -> String {
        "\(Self.daemonName) \(Self.unreachable) (\(error))"
    }

    private func lostReason(_ error: DNSSDError) -> String {
        "the connection to \(Self.daemonName) failed (\(error))"
    }

    /// An operation was created: the daemon answers.
    private func daemonAnswered() {
        link = .up
        if let event = presence.available(logger: logger) { emit(event) }
    }

    /// Ends every operation, reports the services gone, and schedules the next attempt.
    private func daemonLost(reason: String) {
        cancelEverything()
        if let event = presence.unavailable(reason, logger: logger) { emit(event) }
        emit(merge.removeAll())
        let failures: Int
        if case .down(let previous) = link { failures = previous + 1 } else { failures = 1 }
        link = .down(failures: failures)
        let delay = Self.retryDelay(afterFailures: failures)
        // Debug only: the outage was said once at warning level; each retry is for someone tracing it.
        logger.debug("cannot reach \(Self.daemonName); will retry", metadata: ["attempt": "\(failures)", "retry-in": "\(delay)"])
        driver.scheduleRetry(after: delay)
    }

    private func cancelEverything() {
        for operation in purposes.keys { driver.cancel(operation) }
        purposes = [:]
        registrations = []
        unconfirmed = []
        published = nil
        browsers = [:]
        slots = [:]
    }

    private func emit(_ events: [DiscoveryEvent]) {
        for event in events { emit(event) }
    }

    // MARK: - Conversions

    static func resolvedAddress(
        _ family: ResolvedAddress.Family, _ bytes: [UInt8], interfaceIndex: UInt32, interfaceName: String?
    ) -> ResolvedAddress? {
        let host: String
        let isLinkLocal: Bool
        switch family {
        case .ipv4:
            guard bytes.count == 4 else { return nil }
            host = bytes.map(String.init).joined(separator: ".")
            isLinkLocal = bytes[0] == 169 && bytes[1] == 254
        case .ipv6:
            guard bytes.count == 16 else { return nil }
            var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            let written = bytes.withUnsafeBytes { inet_ntop(AF_INET6, $0.baseAddress, &text, socklen_t(text.count)) }
            guard written != nil else { return nil }
            host = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            isLinkLocal = bytes[0] == 0xFE && (bytes[1] & 0xC0) == 0x80
        }
        return ResolvedAddress(
            host: host, family: family, interfaceIndex: Int32(bitPattern: interfaceIndex), interfaceName: interfaceName,
            isLinkLocal: isLinkLocal)
    }
}
