import Logging
import ParleyDiscovery
import Testing

@testable import ParleyDNSSD

/// A ``DNSSDDriver`` that records what the session asks and answers as the test says: no daemon, no C.
final class ScriptedDriver: DNSSDDriver {
    enum Call: Hashable, CustomStringConvertible {
        case register(RegistrationRequest)
        case updateTXT(DNSSDOperationID, [UInt8])
        case browse(type: String, domain: String)
        case resolve(name: String, domain: String, interfaceIndex: UInt32)
        case query(host: String, family: ResolvedAddress.Family, interfaceIndex: UInt32)

        var description: String {
            switch self {
            case .register(let request): "register \(request.name) \(request.registrationType) on \(request.interfaceIndex)"
            case .updateTXT(let operation, _): "updateTXT \(operation)"
            case .browse(let type, let domain): "browse \(type) in \(domain)"
            case .resolve(let name, let domain, let interface): "resolve \(name) in \(domain) on \(interface)"
            case .query(let host, let family, let interface): "query \(family) of \(host) on \(interface)"
            }
        }
    }

    /// Every call that created an operation, with the operation's id, in order.
    private(set) var started: [(call: Call, operation: DNSSDOperationID)] = []
    private(set) var updates: [Call] = []
    private(set) var cancelled: Set<DNSSDOperationID> = []
    private(set) var retries: [Duration] = []
    /// The answer to each call: nil to succeed, or the error code `dns_sd.h` returns.
    var refuse: (Call) -> DNSSDError.Code? = { _ in nil }
    private var lastID: UInt64 = 0

    /// The live operation started by the last call matching `predicate`.
    func operation(_ predicate: (Call) -> Bool) -> DNSSDOperationID? {
        started.last { predicate($0.call) && !cancelled.contains($0.operation) }?.operation
    }

    var live: [Call] { started.filter { !cancelled.contains($0.operation) }.map(\.call) }

    private func start(_ call: Call, _ function: String) throws(DNSSDError) -> DNSSDOperationID {
        if let code = refuse(call) { throw DNSSDError(code: code, operation: function) }
        lastID += 1
        let operation = DNSSDOperationID(rawValue: lastID)
        started.append((call, operation))
        return operation
    }

    func register(_ request: RegistrationRequest) throws(DNSSDError) -> DNSSDOperationID {
        try start(.register(request), "DNSServiceRegister")
    }

    func updateTXT(of registration: DNSSDOperationID, to txt: [UInt8]) throws(DNSSDError) {
        let call = Call.updateTXT(registration, txt)
        if let code = refuse(call) { throw DNSSDError(code: code, operation: "DNSServiceUpdateRecord") }
        updates.append(call)
    }

    func browse(type: String, domain: String) throws(DNSSDError) -> DNSSDOperationID {
        try start(.browse(type: type, domain: domain), "DNSServiceBrowse")
    }

    func resolve(name: String, type: String, domain: String, interfaceIndex: UInt32) throws(DNSSDError) -> DNSSDOperationID {
        try start(.resolve(name: name, domain: domain, interfaceIndex: interfaceIndex), "DNSServiceResolve")
    }

    func queryAddresses(of host: String, family: ResolvedAddress.Family, interfaceIndex: UInt32) throws(DNSSDError)
        -> DNSSDOperationID
    {
        try start(.query(host: host, family: family, interfaceIndex: interfaceIndex), "DNSServiceQueryRecord")
    }

    func cancel(_ operation: DNSSDOperationID) {
        cancelled.insert(operation)
    }

    func scheduleRetry(after delay: Duration) {
        retries.append(delay)
    }

    func interfaceName(_ index: UInt32) -> String? { "if\(index)" }
}

/// A session over a ``ScriptedDriver``, with the events it emitted.
final class SessionUnderTest {
    let driver = ScriptedDriver()
    private(set) var events: [DiscoveryEvent] = []
    private(set) lazy var session = DNSSDSession(
        driver: driver, logger: Logger(label: "parley.dnssd.test", factory: { _ in SwiftLogNoOpLogHandler() }), naming: .avahi
    ) { [unowned self] event in self.events.append(event) }

    /// The events emitted since the last call.
    func takeEvents() -> [DiscoveryEvent] {
        defer { events = [] }
        return events
    }

    func reply(_ reply: DNSSDReply, to operation: DNSSDOperationID?) {
        guard let operation else {
            Issue.record("no live operation to reply \(reply) to; started: \(driver.started.map(\.call))")
            return
        }
        session.handle(reply, from: operation)
    }

    var registration: DNSSDOperationID? { driver.operation { if case .register = $0 { true } else { false } } }
    var browser: DNSSDOperationID? { driver.operation { if case .browse = $0 { true } else { false } } }

    func resolver(_ name: String, on interface: UInt32) -> DNSSDOperationID? {
        driver.operation { $0 == .resolve(name: name, domain: "local.", interfaceIndex: interface) }
    }

    func query(_ host: String, _ family: ResolvedAddress.Family, on interface: UInt32) -> DNSSDOperationID? {
        driver.operation { $0 == .query(host: host, family: family, interfaceIndex: interface) }
    }
}
