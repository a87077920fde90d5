import ParleyDiscovery

/// Names one `dns_sd.h` operation (one `DNSServiceRef`) the session started.
struct DNSSDOperationID: Hashable, Sendable, CustomStringConvertible {
    let rawValue: UInt64
    var description: String { "#\(rawValue)" }
}

/// What an operation's callback said, in Swift terms.
enum DNSSDReply: Hashable, Sendable {
    /// `DNSServiceRegister`'s callback without error: the service is established under `name`.
    case registered(name: String)
    /// `DNSServiceBrowse`'s callback: an instance appeared (`added`) or went on an interface.
    case browsed(added: Bool, interfaceIndex: UInt32, name: String, domain: String)
    /// `DNSServiceResolve`'s callback: the instance's host, port and TXT record (its strings in wire order) as seen
    /// on an interface.
    case resolved(interfaceIndex: UInt32, hostTarget: String, port: UInt16, txt: [[UInt8]])
    /// `DNSServiceQueryRecord`'s callback for an A or AAAA record: an address appeared (`added`) or went.
    case address(added: Bool, interfaceIndex: UInt32, family: ResolvedAddress.Family, bytes: [UInt8])
    /// Any callback's error, or `DNSServiceProcessResult`'s.
    case failed(DNSSDError.Code)
}

/// One `DNSServiceRegister` call.
struct RegistrationRequest: Hashable, Sendable {
    var name: String
    /// The type and its subtypes, as `dns_sd.h` takes them: `_debug._tcp,_relay`.
    var registrationType: String
    /// 0: every interface.
    var interfaceIndex: UInt32
    var port: UInt16
    /// The TXT record in `dns_sd.h`'s form (``TXTRecord/dnssdBytes``).
    var txt: [UInt8]
}

/// What ``DNSSDSession`` asks of `dns_sd.h` and of the loop that runs it. `DNSSDLibrary` does it for real; the
/// session's tests script it, so that renaming, merging and reconnecting are tested without a daemon.
///
/// Every method is called on the loop's thread. Replies come back through ``DNSSDSession/handle(_:from:)``, never
/// from inside these calls.
protocol DNSSDDriver: AnyObject {
    func register(_ request: RegistrationRequest) throws(DNSSDError) -> DNSSDOperationID
    /// Replaces a registration's TXT record (`DNSServiceUpdateRecord` on its primary TXT record).
    func updateTXT(of registration: DNSSDOperationID, to txt: [UInt8]) throws(DNSSDError)
    func browse(type: String, domain: String) throws(DNSSDError) -> DNSSDOperationID
    func resolve(name: String, type: String, domain: String, interfaceIndex: UInt32) throws(DNSSDError) -> DNSSDOperationID
    /// Asks for `host`'s A (IPv4) or AAAA (IPv6) records on an interface, and keeps reporting their changes.
    func queryAddresses(of host: String, family: ResolvedAddress.Family, interfaceIndex: UInt32) throws(DNSSDError)
        -> DNSSDOperationID
    /// Ends an operation: no reply of it comes any more (a registration's records are withdrawn).
    func cancel(_ operation: DNSSDOperationID)
    /// Calls ``DNSSDSession/retryDue()`` once `delay` has passed, replacing a retry already scheduled.
    func scheduleRetry(after delay: Duration)
    /// The name of an interface ("eth0"), if it exists.
    func interfaceName(_ index: UInt32) -> String?
}
