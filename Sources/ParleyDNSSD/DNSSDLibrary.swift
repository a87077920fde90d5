#if canImport(dnssd)
internal import dnssd
#elseif canImport(CDNSSD)
internal import CDNSSD
#endif
import ParleyDiscovery

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Every `DNSServiceRef` Parley holds, and the only code that calls `dns_sd.h`.
///
/// Confinement: used on the loop's thread only (Avahi's compatibility library is not thread-safe, and Apple's asks
/// that one reference not be used by two threads at once). Callbacks run only inside `DNSServiceProcessResult`,
/// which ``process(_:)`` calls: they append what they were told to their operation's `replies`, and the session
/// reads them after the call returns, so no reference is ever freed from inside its own callback.
///
/// Flags: every call passes 0. Avahi's library refuses any other value (`kDNSServiceErr_Unsupported`, with a warning
/// on standard error), so nothing here relies on `kDNSServiceFlagsShareConnection` (one reference, one
/// connection, per operation), `kDNSServiceFlagsNoAutoRename` (renames are read from the register callback) or
/// the interface index `kDNSServiceInterfaceIndexLocalOnly`.
final class DNSSDLibrary: DNSSDDriver {
    /// One reference and what its callbacks said since the last ``process(_:)``.
    final class Operation {
        let id: DNSSDOperationID
        var reference: DNSServiceRef?
        var replies: [DNSSDReply] = []

        init(id: DNSSDOperationID) { self.id = id }
    }

    private var operations: [DNSSDOperationID: Operation] = [:]
    private var lastID: UInt64 = 0
    /// When the session asked to be called again (``DNSSDSession/retryDue()``); the loop waits until then at most.
    var retryDeadline: ContinuousClock.Instant?

    /// `kDNSServiceFlagsAdd`, `kDNSServiceClass_IN`, `kDNSServiceType_A` and `_AAAA`: fixed by the DNS-SD API and
    /// by DNS, spelled here so that the same code reads them on every platform (Swift imports the headers'
    /// anonymous enums with different integer types).
    static let flagAdd: DNSServiceFlags = 0x2
    static let classIN: UInt16 = 1
    static let typeA: UInt16 = 1
    static let typeAAAA: UInt16 = 28

    init() {
        #if os(Linux)
        _ = Self.zeroFilledAllocations
        #endif
    }

    #if os(Linux)
    /// Avahi's compatibility library leaves the reply callbacks of another kind than a reference's own unset, and
    /// reads them when the daemon goes away (see shim.h): zero-filled allocations keep it from calling garbage. Once
    /// per process, before the first reference.
    private static let zeroFilledAllocations: Void = parley_cdnssd_zero_fill_allocations()
    #endif

    /// The socket of each live operation, to wait on.
    var descriptors: [(operation: DNSSDOperationID, descriptor: Int32)] {
        operations.values.compactMap { operation in
            guard let reference = operation.reference else { return nil }
            let descriptor = DNSServiceRefSockFD(reference)
            return descriptor >= 0 ? (operation.id, descriptor) : nil
        }
    }

    /// Reads what the daemon sent for `operation` (its socket is readable) and returns what its callbacks said; an
    /// operation cancelled meanwhile returns nothing.
    func process(_ id: DNSSDOperationID) -> [DNSSDReply] {
        guard let operation = operations[id], let reference = operation.reference else { return [] }
        let result = DNSServiceProcessResult(reference)
        var replies = operation.replies
        operation.replies = []
        if result != 0 { replies.append(.failed(DNSSDError.Code(rawValue: result))) }
        return replies
    }

    /// Ends every operation.
    func cancelAll() {
        for id in Array(operations.keys) { cancel(id) }
    }

    // MARK: - DNSSDDriver

    func register(_ request: RegistrationRequest) throws(DNSSDError) -> DNSSDOperationID {
        try start("DNSServiceRegister") { reference, context in
            request.txt.withUnsafeBytes { txt in
                DNSServiceRegister(
                    reference, 0, request.interfaceIndex, request.name, request.registrationType, nil, nil,
                    request.port.bigEndian, UInt16(txt.count), txt.baseAddress, registerReply, context)
            }
        }
    }

    func updateTXT(of registration: DNSSDOperationID, to txt: [UInt8]) throws(DNSSDError) {
        guard let reference = operations[registration]?.reference else {
            throw DNSSDError(code: .badReference, operation: "DNSServiceUpdateRecord")
        }
        // A nil record reference names the service's own TXT record.
        let result = txt.withUnsafeBytes { bytes in
            DNSServiceUpdateRecord(reference, nil, 0, UInt16(bytes.count), bytes.baseAddress, 0)
        }
        if result != 0 { throw DNSSDError(result, operation: "DNSServiceUpdateRecord") }
    }

    func browse(type: String, domain: String) throws(DNSSDError) -> DNSSDOperationID {
        try start("DNSServiceBrowse") { reference, context in
            DNSServiceBrowse(reference, 0, 0, type, domain, browseReply, context)
        }
    }

    func resolve(name: String, type: String, domain: String, interfaceIndex: UInt32) throws(DNSSDError) -> DNSSDOperationID {
        try start("DNSServiceResolve") { reference, context in
            DNSServiceResolve(reference, 0, interfaceIndex, name, type, domain, resolveReply, context)
        }
    }

    func queryAddresses(of host: String, family: ResolvedAddress.Family, interfaceIndex: UInt32) throws(DNSSDError)
        -> DNSSDOperationID
    {
        // Avahi's library has no DNSServiceGetAddrInfo: the A and AAAA records are asked for one by one.
        let type = family == .ipv4 ? Self.typeA : Self.typeAAAA
        return try start("DNSServiceQueryRecord") { reference, context in
            DNSServiceQueryRecord(reference, 0, interfaceIndex, host, type, Self.classIN, queryReply, context)
        }
    }

    func cancel(_ id: DNSSDOperationID) {
        guard let operation = operations.removeValue(forKey: id), let reference = operation.reference else { return }
        DNSServiceRefDeallocate(reference)
    }

    func scheduleRetry(after delay: Duration) {
        retryDeadline = .now + delay
    }

    func interfaceName(_ index: UInt32) -> String? {
        guard index > 0, index != UInt32.max else { return nil }
        var buffer = [CChar](repeating: 0, count: Int(IF_NAMESIZE) + 1)
        guard if_indextoname(index, &buffer) != nil else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Makes an operation, calls `call` with its reference to fill and its callback context, and keeps it.
    private func start(
        _ function: String,
        _ call: (UnsafeMutablePointer<DNSServiceRef?>, UnsafeMutableRawPointer) -> DNSServiceErrorType
    ) throws(DNSSDError) -> DNSSDOperationID {
        lastID += 1
        let operation = Operation(id: DNSSDOperationID(rawValue: lastID))
        var reference: DNSServiceRef?
        // Unretained: `operations` keeps the operation for as long as its reference lives.
        let result = call(&reference, Unmanaged.passUnretained(operation).toOpaque())
        guard result == 0, let reference else {
            throw DNSSDError(result != 0 ? result : DNSSDError.Code.unknown.rawValue, operation: function)
        }
        operation.reference = reference
        operations[operation.id] = operation
        return operation.id
    }
}

// The C callbacks. They run inside DNSServiceProcessResult on the loop's thread; `context` is the operation.

private func operation(_ context: UnsafeMutableRawPointer?) -> DNSSDLibrary.Operation? {
    context.map { Unmanaged<DNSSDLibrary.Operation>.fromOpaque($0).takeUnretainedValue() }
}

private func text(_ string: UnsafePointer<CChar>?) -> String {
    string.map { String(cString: $0) } ?? ""
}

private let registerReply: DNSServiceRegisterReply = { _, _, error, name, _, _, context in
    guard let operation = operation(context) else { return }
    operation.replies.append(error == 0 ? .registered(name: text(name)) : .failed(DNSSDError.Code(rawValue: error)))
}

private let browseReply: DNSServiceBrowseReply = { _, flags, interface, error, name, _, domain, context in
    guard let operation = operation(context) else { return }
    guard error == 0 else {
        operation.replies.append(.failed(DNSSDError.Code(rawValue: error)))
        return
    }
    operation.replies.append(
        .browsed(added: flags & DNSSDLibrary.flagAdd != 0, interfaceIndex: interface, name: text(name), domain: text(domain)))
}

private let resolveReply: DNSServiceResolveReply = { _, _, interface, error, _, host, port, txtLength, txt, context in
    guard let operation = operation(context) else { return }
    guard error == 0 else {
        operation.replies.append(.failed(DNSSDError.Code(rawValue: error)))
        return
    }
    var strings = TXTRecord.dnssdStrings(txt.map { Array(UnsafeBufferPointer(start: $0, count: Int(txtLength))) } ?? [])
    #if os(Linux)
    // Avahi's compatibility library hands the record over last string first: it serializes the list Avahi's client
    // gives it, already in wire order, as if it had been built backwards. Wire order decides which of two equal keys
    // counts (RFC 6763 §6.4), so it is put back.
    strings.reverse()
    #endif
    operation.replies.append(
        .resolved(interfaceIndex: interface, hostTarget: text(host), port: UInt16(bigEndian: port), txt: strings))
}

private let queryReply: DNSServiceQueryRecordReply = { _, flags, interface, error, _, type, _, length, data, _, context in
    guard let operation = operation(context) else { return }
    guard error == 0 else {
        operation.replies.append(.failed(DNSSDError.Code(rawValue: error)))
        return
    }
    guard let data, type == DNSSDLibrary.typeA || type == DNSSDLibrary.typeAAAA else { return }
    let bytes = Array(UnsafeRawBufferPointer(start: data, count: Int(length)))
    operation.replies.append(
        .address(
            added: flags & DNSSDLibrary.flagAdd != 0, interfaceIndex: interface,
            family: type == DNSSDLibrary.typeA ? .ipv4 : .ipv6, bytes: bytes))
}
