internal import CAvahi
import Logging
import ParleyDiscovery

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Where Avahi saw a service: it reports (and resolves) each service once per interface and mDNS protocol.
/// `family` is the protocol the result came on, not the address family.
struct AvahiSlot: Hashable, Sendable {
    var interfaceIndex: Int32
    var family: ResolvedAddress.Family
}

/// Every Avahi C object Parley owns, and the Swift state that goes with them.
///
/// Confinement: an `AvahiSession` is reached only (a) from Avahi callbacks, which the threaded poll runs on its own
/// thread while holding its lock, or (b) from `AvahiDiscovery` with `avahi_threaded_poll_lock` held, or before the
/// poll thread starts / after it stopped. So at most one thread touches it at a time, and it is not `Sendable`.
/// Public API methods must never be called from inside a callback (the poll lock is not recursive); the session's own
/// methods never call them.
final class AvahiSession {
    private let pollAPI: UnsafePointer<AvahiPoll>
    private let logger: Logger
    private let continuation: AsyncStream<DiscoveryEvent>.Continuation

    private var client: OpaquePointer?
    private var reconnectTimer: OpaquePointer?
    private var consecutiveConnectFailures = 0

    private var presence = DaemonPresence(daemonName: "avahi-daemon")

    // Advertising.
    private var advertisement: Advertisement?
    private var fullSubtypes: [String] = []
    /// The name in use (differs from `advertisement.instanceName` after a collision).
    private var currentName: String?
    private var group: OpaquePointer?
    /// What the group currently holds (to update only the TXT record when nothing else changed).
    private var published: Advertisement?

    // Browsing.
    private var browsedScopes: [BrowseScope] = []
    private var browsers: [BrowseScope: OpaquePointer] = [:]
    private var browserScopes: [OpaquePointer: BrowseScope] = [:]
    private struct ResolverKey: Hashable {
        var service: ServiceKey
        var slot: AvahiSlot
    }
    private struct ResolverInfo {
        var key: ResolverKey
        /// Whether this resolver asks for any address family (the fallback after a family-specific one failed).
        var anyFamily: Bool
    }
    /// Wide-area browsing is one-shot in avahi 0.8: a unicast DNS lookup is sent once and never repeated, and
    /// nothing is reported when a record goes away. So each wide-area scope is browsed again every
    /// ``wideAreaRefresh``; a service the new round does not list is gone. (avahi answers a new round from its
    /// cache while the PTR record's TTL runs, so a change is seen within that TTL plus one period.)
    static let wideAreaRefresh: UInt32 = 10_000
    private var wideAreaTimer: OpaquePointer?
    /// Per wide-area scope, the services the current round has listed so far.
    private var wideAreaRounds: [BrowseScope: Set<ServiceKey>] = [:]
    private var resolvers: [ResolverKey: OpaquePointer] = [:]
    private var resolverInfo: [OpaquePointer: ResolverInfo] = [:]
    private var merge = ServiceMergeState<AvahiSlot>()

    init(pollAPI: UnsafePointer<AvahiPoll>, logger: Logger, continuation: AsyncStream<DiscoveryEvent>.Continuation) {
        self.pollAPI = pollAPI
        self.logger = logger
        self.continuation = continuation
    }

    private var userdata: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    fileprivate static func from(_ userdata: UnsafeMutableRawPointer?) -> AvahiSession {
        Unmanaged<AvahiSession>.fromOpaque(userdata!).takeUnretainedValue()
    }

    private func emit(_ events: [DiscoveryEvent]) {
        for event in events { continuation.yield(event) }
    }

    // MARK: - Client lifecycle

    /// Creates the client. With `AVAHI_CLIENT_NO_FAIL` this succeeds even if avahi-daemon is not running (the
    /// client then waits in CONNECTING); it fails only if the system D-Bus itself is unreachable, in which case we
    /// retry on a timer.
    func connect() {
        var error: Int32 = 0
        let created = avahi_client_new(pollAPI, AVAHI_CLIENT_NO_FAIL, sessionClientCallback, userdata, &error)
        guard let created else {
            let failure = AvahiError(error, operation: "avahi_client_new")
            daemonLost(reason: "the system D-Bus is not reachable (\(failure.message)), so avahi-daemon cannot be reached")
            consecutiveConnectFailures += 1
            // Debug only: the outage was said once at info; each retry is for someone tracing it.
            logger.debug("cannot reach the system D-Bus; will retry", metadata: ["attempt": "\(consecutiveConnectFailures)"])
            scheduleReconnect(afterMilliseconds: min(1000 * UInt32(consecutiveConnectFailures), 5000))
            return
        }
        consecutiveConnectFailures = 0
        client = created
    }

    fileprivate func clientStateChanged(_ changed: OpaquePointer, _ state: AvahiClientState) {
        // The first call comes from inside avahi_client_new, before `connect` has stored the pointer.
        if client == nil { client = changed }
        guard changed == client else { return }
        switch state {
        case AVAHI_CLIENT_S_RUNNING:
            daemonRunning(changed)
        case AVAHI_CLIENT_S_REGISTERING, AVAHI_CLIENT_S_COLLISION:
            // The daemon is (re)registering its host name: our records must be withdrawn and added again once it
            // runs (Avahi's documented protocol).
            if let group { avahi_entry_group_reset(group) }
            published = nil
        case AVAHI_CLIENT_CONNECTING:
            daemonLost(reason: "avahi-daemon is not running (no org.freedesktop.Avahi on the system D-Bus)")
        case AVAHI_CLIENT_FAILURE:
            let failure = AvahiError(avahi_client_errno(changed), operation: "avahi client")
            daemonLost(reason: "the connection to avahi-daemon failed (\(failure.message))")
            // A failed client is dead: replace it, outside of its own callback.
            scheduleReconnect(afterMilliseconds: 0)
        default:
            logger.debug("avahi client state", metadata: ["state": "\(state.rawValue)"])
        }
    }

    private func scheduleReconnect(afterMilliseconds delay: UInt32) {
        guard reconnectTimer == nil else { return }
        reconnectTimer = parley_avahi_timeout_new(pollAPI, delay, sessionTimerCallback, userdata)
        if reconnectTimer == nil {
            logger.error("cannot arm Avahi's reconnect timer; discovery stays off")
        }
    }

    fileprivate func reconnectTimerFired() {
        if let reconnectTimer { parley_avahi_timeout_free(pollAPI, reconnectTimer) }
        reconnectTimer = nil
        freeServiceObjects()
        if let client { avahi_client_free(client) }
        client = nil
        connect()
    }

    private func daemonRunning(_ client: OpaquePointer) {
        if presence.isAvailable != true {
            let version = avahi_client_get_version_string(client).map { String(cString: $0) } ?? "avahi"
            let host = avahi_client_get_host_name_fqdn(client).map { String(cString: $0) } ?? "?"
            if let event = presence.available(logger: logger, metadata: ["avahi": "\(version)", "host": "\(host)"]) {
                continuation.yield(event)
            }
        }
        if advertisement != nil, published == nil {
            if let error = publish() { reportAdvertisementFailure(error) }
        }
        for scope in browsedScopes where browsers[scope] == nil {
            startBrowser(scope, client: client)
        }
        scheduleWideAreaRound()
    }

    private func scheduleWideAreaRound() {
        guard wideAreaTimer == nil, browsedScopes.contains(where: \.isWideArea) else { return }
        wideAreaTimer = parley_avahi_timeout_new(pollAPI, Self.wideAreaRefresh, sessionWideAreaTimerCallback, userdata)
    }

    /// Browses every wide-area scope again (see ``wideAreaRefresh``).
    fileprivate func wideAreaTimerFired() {
        if let wideAreaTimer { parley_avahi_timeout_free(pollAPI, wideAreaTimer) }
        wideAreaTimer = nil
        guard clientIsRunning, let client else { return }
        for scope in browsedScopes where scope.isWideArea {
            if let browser = browsers.removeValue(forKey: scope) {
                browserScopes[browser] = nil
                avahi_service_browser_free(browser)
            }
            freeResolvers(of: scope)
            wideAreaRounds[scope] = []
            startBrowser(scope, client: client)
        }
        scheduleWideAreaRound()
    }

    /// A wide-area round is complete: what it did not list is gone.
    private func finishWideAreaRound(_ scope: BrowseScope) {
        guard let listed = wideAreaRounds.removeValue(forKey: scope) else { return }
        for key in merge.keys(ofType: scope.type, domain: scope.domain) where !listed.contains(key) {
            emit(merge.removeAll(key))
        }
    }

    private func daemonLost(reason: String) {
        if let event = presence.unavailable(reason, logger: logger) { continuation.yield(event) }
        freeServiceObjects()
        emit(merge.removeAll())
    }

    /// Frees the entry group, browsers and resolvers (they belong to a client that is gone or going).
    private func freeServiceObjects() {
        for resolver in resolverInfo.keys { avahi_service_resolver_free(resolver) }
        resolvers = [:]
        resolverInfo = [:]
        for browser in browserScopes.keys { avahi_service_browser_free(browser) }
        browsers = [:]
        browserScopes = [:]
        wideAreaRounds = [:]
        if let wideAreaTimer { parley_avahi_timeout_free(pollAPI, wideAreaTimer) }
        wideAreaTimer = nil
        if let group { avahi_entry_group_free(group) }
        group = nil
        published = nil
    }

    /// Frees everything. Called once the poll thread has stopped.
    func tearDown() {
        freeServiceObjects()
        if let reconnectTimer { parley_avahi_timeout_free(pollAPI, reconnectTimer) }
        reconnectTimer = nil
        if let client { avahi_client_free(client) }
        client = nil
    }

    private var clientIsRunning: Bool {
        guard let client else { return false }
        return avahi_client_get_state(client) == AVAHI_CLIENT_S_RUNNING
    }

    // MARK: - Advertising

    /// Replaces what we advertise. Published at once if the daemon runs, else as soon as it does.
    func setAdvertisement(_ new: Advertisement, subtypes: [String]) throws(AvahiError) {
        let previous = advertisement
        advertisement = new
        fullSubtypes = subtypes
        if previous?.instanceName != new.instanceName { currentName = nil }
        guard clientIsRunning else { return }
        if let published, let group, let currentName, published.type == new.type, published.port == new.port,
            published.subtypes == new.subtypes, published.instanceName == new.instanceName,
            published.interfaceIndices == new.interfaceIndices
        {
            guard published.txt != new.txt else { return }
            for interface in Self.interfaces(of: new) {
                let result = withStringList(new.txt) { list in
                    avahi_entry_group_update_service_txt_strlst(
                        group, interface, PARLEY_AVAHI_PROTO_UNSPEC, AvahiPublishFlags(0), currentName,
                        new.type.rawValue, nil, list)
                }
                if result < 0 { throw AvahiError(result, operation: "avahi_entry_group_update_service_txt_strlst") }
            }
            self.published = new
            return
        }
        if let error = publish() { throw error }
    }

    func clearAdvertisement() {
        advertisement = nil
        currentName = nil
        if let group {
            avahi_entry_group_free(group)
            logger.info("advertisement withdrawn")
        }
        group = nil
        published = nil
    }

    /// The interfaces to publish on: those the advertisement names, or every one.
    private static func interfaces(of advertisement: Advertisement) -> [AvahiIfIndex] {
        advertisement.interfaceIndices.map { $0.map { AvahiIfIndex($0) } } ?? [PARLEY_AVAHI_IF_UNSPEC]
    }

    /// (Re)publishes the advertisement, taking Avahi's alternative name for as long as the name collides locally.
    private func publish() -> AvahiError? {
        guard let advertisement, let client else { return nil }
        if advertisement.interfaceIndices?.isEmpty == true {
            // No interface the filter admits is up: nothing to publish until one is.
            if let group { avahi_entry_group_reset(group) }
            published = advertisement
            logger.info("not advertising: no usable network interface is up", metadata: ["name": "\(advertisement.instanceName)"])
            return nil
        }
        if group == nil {
            group = avahi_entry_group_new(client, sessionGroupCallback, userdata)
            if group == nil { return AvahiError(avahi_client_errno(client), operation: "avahi_entry_group_new") }
        } else if let group {
            avahi_entry_group_reset(group)
        }
        guard let group else { return nil }
        var name = currentName ?? advertisement.instanceName
        for _ in 0..<100 {
            let result = addService(group, name: name, advertisement)
            if result == AvahiError.Code.collision.rawValue {
                // Another service on this host already has the name: take the next one and say so.
                name = rename(from: name)
                avahi_entry_group_reset(group)
                continue
            }
            if result < 0 {
                avahi_entry_group_reset(group)
                return AvahiError(result, operation: "avahi_entry_group_add_service_strlst")
            }
            currentName = name
            let committed = avahi_entry_group_commit(group)
            if committed < 0 { return AvahiError(committed, operation: "avahi_entry_group_commit") }
            published = advertisement
            logger.debug(
                "advertisement submitted",
                metadata: ["name": "\(name)", "type": "\(advertisement.type)", "port": "\(advertisement.port)"]
            )
            return nil
        }
        return AvahiError(AvahiError.Code.collision.rawValue, operation: "choosing a free instance name")
    }

    /// Adds the service and its subtypes to the (empty) group; returns Avahi's result code.
    private func addService(_ group: OpaquePointer, name: String, _ advertisement: Advertisement) -> Int32 {
        let type = advertisement.type.rawValue
        for interface in Self.interfaces(of: advertisement) {
            let result = withStringList(advertisement.txt) { list in
                avahi_entry_group_add_service_strlst(
                    group, interface, PARLEY_AVAHI_PROTO_UNSPEC, AvahiPublishFlags(0), name, type, nil,
                    nil, advertisement.port, list)
            }
            if result < 0 { return result }
            for subtype in fullSubtypes {
                let added = avahi_entry_group_add_service_subtype(
                    group, interface, PARLEY_AVAHI_PROTO_UNSPEC, AvahiPublishFlags(0), name, type, nil,
                    subtype)
                if added < 0 { return added }
            }
        }
        return 0
    }

    /// Avahi's next name for `name` ("Name" → "Name #2" → "Name #3"), reported as an event and logged.
    private func rename(from name: String) -> String {
        guard let alternative = avahi_alternative_service_name(name) else { return name + " #2" }
        defer { avahi_free(alternative) }
        let next = String(cString: alternative)
        logger.info(
            "advertised name is taken on the network; using Avahi's alternative name",
            metadata: ["from": "\(name)", "to": "\(next)"]
        )
        continuation.yield(.renamed(from: name, to: next))
        return next
    }

    fileprivate func groupStateChanged(_ changed: OpaquePointer, _ state: AvahiEntryGroupState) {
        // The first call comes from inside avahi_entry_group_new, before `group` is set; ignore stale groups.
        guard group == nil || changed == group else { return }
        switch state {
        case AVAHI_ENTRY_GROUP_ESTABLISHED:
            let name = currentName ?? advertisement?.instanceName ?? ""
            logger.info(
                "advertising on the LAN",
                metadata: [
                    "name": "\(name)", "type": "\(advertisement?.type.rawValue ?? "")",
                    "port": "\(advertisement?.port ?? 0)",
                ]
            )
            continuation.yield(.advertised(instanceName: name))
        case AVAHI_ENTRY_GROUP_COLLISION:
            // A remote service took the name during probing: move to the alternative and publish again.
            guard let name = currentName else { return }
            currentName = rename(from: name)
            if let error = publish() { reportAdvertisementFailure(error) }
        case AVAHI_ENTRY_GROUP_FAILURE:
            let client = avahi_entry_group_get_client(changed)
            let code = client.map { avahi_client_errno($0) } ?? AvahiError.Code.failure.rawValue
            reportAdvertisementFailure(AvahiError(code, operation: "advertising"))
        default:
            break
        }
    }

    private func reportAdvertisementFailure(_ error: AvahiError) {
        logger.error("advertisement failed; it stays withdrawn", metadata: ["error": "\(error)"])
        if let group { avahi_entry_group_free(group) }
        group = nil
        published = nil
        advertisement = nil
        continuation.yield(.advertisementFailed(AdvertisementFailure(error)))
    }

    // MARK: - Browsing and resolving

    func browse(_ scope: BrowseScope) {
        guard !browsedScopes.contains(scope) else { return }
        browsedScopes.append(scope)
        if clientIsRunning, let client {
            startBrowser(scope, client: client)
            scheduleWideAreaRound()
        }
    }

    func stopBrowsing(_ scope: BrowseScope) {
        browsedScopes.removeAll { $0 == scope }
        if let browser = browsers.removeValue(forKey: scope) {
            browserScopes[browser] = nil
            avahi_service_browser_free(browser)
        }
        freeResolvers(of: scope)
        emit(merge.removeAll(ofType: scope.type, domain: scope.domain))
    }

    private func freeResolvers(of scope: BrowseScope) {
        for key in resolvers.keys
        where key.service.type == scope.type && sameDomain(key.service.domain, scope.domain) {
            freeResolver(key)
        }
    }

    private func startBrowser(_ scope: BrowseScope, client: OpaquePointer) {
        let browser = avahi_service_browser_new(
            client, PARLEY_AVAHI_IF_UNSPEC, PARLEY_AVAHI_PROTO_UNSPEC, scope.type.rawValue, scope.domain,
            AvahiLookupFlags(0), sessionBrowserCallback, userdata)
        guard let browser else {
            let error = AvahiError(avahi_client_errno(client), operation: "avahi_service_browser_new")
            logger.error("cannot browse", metadata: ["type": "\(scope.type)", "domain": "\(scope.domain)", "error": "\(error)"])
            return
        }
        browsers[scope] = browser
        browserScopes[browser] = scope
        logger.debug("browsing", metadata: ["type": "\(scope.type)", "domain": "\(scope.domain)"])
    }

    fileprivate func browserEvent(
        _ browser: OpaquePointer, interface: AvahiIfIndex, protocol proto: AvahiProtocol, event: AvahiBrowserEvent,
        name: UnsafePointer<CChar>?, domain: UnsafePointer<CChar>?
    ) {
        guard let scope = browserScopes[browser] else { return }
        let type = scope.type
        switch event {
        case AVAHI_BROWSER_NEW, AVAHI_BROWSER_REMOVE:
            // Wide-area results come on no interface and no protocol: one slot, resolved for any address family.
            guard let name, let domain, let family = Self.family(of: proto) ?? (scope.isWideArea ? .ipv4 : nil) else { return }
            let key = ResolverKey(
                service: .init(instanceName: String(cString: name), type: type, domain: String(cString: domain)),
                slot: .init(interfaceIndex: interface, family: family))
            if event == AVAHI_BROWSER_NEW {
                wideAreaRounds[scope]?.insert(key.service)
                merge.appeared(key.service, on: key.slot)
                if resolvers[key] == nil { startResolver(key, anyFamily: Self.family(of: proto) == nil) }
            } else {
                freeResolver(key)
                emit(merge.disappeared(key.service, on: key.slot))
            }
        case AVAHI_BROWSER_ALL_FOR_NOW:
            finishWideAreaRound(scope)
        case AVAHI_BROWSER_FAILURE:
            let client = avahi_service_browser_get_client(browser)
            let error = AvahiError(client.map { avahi_client_errno($0) } ?? -1, operation: "browsing")
            if scope.isWideArea {
                // An empty domain answers "not found" or NXDOMAIN: an empty round. An unreachable server says
                // nothing about the services: keep them until a round succeeds.
                if error.code == .notFound || error.code == .dnsNXDomain {
                    finishWideAreaRound(scope)
                } else {
                    wideAreaRounds[scope] = nil
                    logger.debug("wide-area browsing failed; will try again", metadata: ["domain": "\(scope.domain)", "error": "\(error)"])
                }
                browsers[scope] = nil
                browserScopes[browser] = nil
                avahi_service_browser_free(browser)
                return
            }
            logger.warning("browsing failed", metadata: ["type": "\(type)", "domain": "\(scope.domain)", "error": "\(error)"])
            browsers[scope] = nil
            browserScopes[browser] = nil
            avahi_service_browser_free(browser)
        default:
            break  // CACHE_EXHAUSTED: nothing to report.
        }
    }

    /// Resolves one slot. First for the address family of the slot's protocol (so that the IPv4 and IPv6 results
    /// together give both kinds of address); if that fails, for any family.
    private func startResolver(_ key: ResolverKey, anyFamily: Bool) {
        guard let client else { return }
        let proto: AvahiProtocol =
            key.slot.interfaceIndex < 0 ? PARLEY_AVAHI_PROTO_UNSPEC  // wide-area: found on no interface or protocol
            : key.slot.family == .ipv4 ? PARLEY_AVAHI_PROTO_INET : PARLEY_AVAHI_PROTO_INET6
        let resolver = avahi_service_resolver_new(
            client, key.slot.interfaceIndex, proto, key.service.instanceName, key.service.type.rawValue,
            key.service.domain, anyFamily ? PARLEY_AVAHI_PROTO_UNSPEC : proto, AvahiLookupFlags(0),
            sessionResolverCallback, userdata)
        guard let resolver else {
            let error = AvahiError(avahi_client_errno(client), operation: "avahi_service_resolver_new")
            logger.debug("cannot resolve", metadata: ["name": "\(key.service.instanceName)", "error": "\(error)"])
            return
        }
        resolvers[key] = resolver
        resolverInfo[resolver] = ResolverInfo(key: key, anyFamily: anyFamily)
    }

    private func freeResolver(_ key: ResolverKey) {
        guard let resolver = resolvers.removeValue(forKey: key) else { return }
        resolverInfo[resolver] = nil
        avahi_service_resolver_free(resolver)
    }

    fileprivate func resolverEvent(
        _ resolver: OpaquePointer, interface: AvahiIfIndex, event: AvahiResolverEvent,
        hostName: UnsafePointer<CChar>?, address: UnsafePointer<AvahiAddress>?, port: UInt16,
        txt: UnsafeMutablePointer<AvahiStringList>?
    ) {
        guard let info = resolverInfo[resolver] else { return }
        let key = info.key
        if event == AVAHI_RESOLVER_FOUND, let hostName, let address,
            let resolved = Self.resolvedAddress(address, interface: interface)
        {
            let resolution = ServiceResolution(
                hostName: String(cString: hostName), addresses: [resolved], port: port, txt: Self.txtRecord(txt))
            emit(merge.resolved(key.service, on: key.slot, resolution))
            return
        }
        let client = avahi_service_resolver_get_client(resolver)
        let error = AvahiError(client.map { avahi_client_errno($0) } ?? -1, operation: "resolving")
        logger.debug(
            "resolving failed", metadata: ["name": "\(key.service.instanceName)", "error": "\(error.message)"])
        freeResolver(key)
        if !info.anyFamily {
            startResolver(key, anyFamily: true)
        } else {
            emit(merge.resolutionFailed(key.service, on: key.slot))
        }
    }

    // MARK: - Conversions

    private static func family(of proto: AvahiProtocol) -> ResolvedAddress.Family? {
        switch proto {
        case PARLEY_AVAHI_PROTO_INET: .ipv4
        case PARLEY_AVAHI_PROTO_INET6: .ipv6
        default: nil
        }
    }

    private static func resolvedAddress(_ address: UnsafePointer<AvahiAddress>, interface: AvahiIfIndex)
        -> ResolvedAddress?
    {
        guard let family = family(of: address.pointee.proto) else { return nil }
        var text = [CChar](repeating: 0, count: Int(AVAHI_ADDRESS_STR_MAX) + 1)
        guard avahi_address_snprint(&text, text.count, address) != nil else { return nil }
        let host = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let isLinkLocal: Bool
        switch family {
        case .ipv4:
            // Network byte order: the first octet is the lowest-addressed byte.
            let octets = withUnsafeBytes(of: address.pointee.data.ipv4.address) { Array($0) }
            isLinkLocal = octets[0] == 169 && octets[1] == 254
        case .ipv6:
            let bytes = withUnsafeBytes(of: address.pointee.data.ipv6.address) { Array($0) }
            isLinkLocal = bytes[0] == 0xFE && (bytes[1] & 0xC0) == 0x80
        }
        return ResolvedAddress(
            host: host, family: family, interfaceIndex: interface, interfaceName: interfaceName(interface),
            isLinkLocal: isLinkLocal)
    }

    private static func interfaceName(_ index: AvahiIfIndex) -> String? {
        guard index > 0 else { return nil }
        var buffer = [CChar](repeating: 0, count: Int(IF_NAMESIZE) + 1)
        guard if_indextoname(UInt32(index), &buffer) != nil else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// A list Avahi hands us is in wire order. `avahi_string_list_add_*` prepends, and Avahi sends a list last node
    /// first, so a list built by adding in order also goes out in order (both checked against python-zeroconf).
    private static func txtRecord(_ list: UnsafeMutablePointer<AvahiStringList>?) -> TXTRecord {
        var strings: [[UInt8]] = []
        var node = list
        while let current = node {
            let size = avahi_string_list_get_size(current)
            if let text = avahi_string_list_get_text(current) {
                strings.append(Array(UnsafeBufferPointer(start: text, count: size)))
            } else {
                strings.append([])
            }
            node = avahi_string_list_get_next(current)
        }
        return TXTRecord(strings: strings)
    }

    /// Builds Avahi's string list for `txt` (in wire order), passes it to `body`, and frees it.
    private func withStringList(_ txt: TXTRecord, _ body: (UnsafeMutablePointer<AvahiStringList>?) -> Int32) -> Int32 {
        var list: UnsafeMutablePointer<AvahiStringList>? = nil
        for string in txt.encodedStrings {
            let grown = string.withUnsafeBufferPointer { avahi_string_list_add_arbitrary(list, $0.baseAddress, $0.count) }
            guard let grown else {
                avahi_string_list_free(list)
                return AvahiError.Code.noMemory.rawValue
            }
            list = grown
        }
        defer { avahi_string_list_free(list) }
        return body(list)
    }
}

// The C callbacks. Avahi calls them on the poll thread with the poll lock held; `userdata` is the session.

private let sessionClientCallback: AvahiClientCallback = { client, state, userdata in
    guard let client else { return }
    AvahiSession.from(userdata).clientStateChanged(client, state)
}

private let sessionGroupCallback: AvahiEntryGroupCallback = { group, state, userdata in
    guard let group else { return }
    AvahiSession.from(userdata).groupStateChanged(group, state)
}

private let sessionBrowserCallback: AvahiServiceBrowserCallback = {
    browser, interface, proto, event, name, _, domain, _, userdata in
    guard let browser else { return }
    AvahiSession.from(userdata).browserEvent(
        browser, interface: interface, protocol: proto, event: event, name: name, domain: domain)
}

private let sessionResolverCallback: AvahiServiceResolverCallback = {
    resolver, interface, _, event, _, _, _, hostName, address, port, txt, _, userdata in
    guard let resolver else { return }
    AvahiSession.from(userdata).resolverEvent(
        resolver, interface: interface, event: event, hostName: hostName, address: address, port: port, txt: txt)
}

private let sessionTimerCallback: AvahiTimeoutCallback = { _, userdata in
    AvahiSession.from(userdata).reconnectTimerFired()
}

private let sessionWideAreaTimerCallback: AvahiTimeoutCallback = { _, userdata in
    AvahiSession.from(userdata).wideAreaTimerFired()
}
