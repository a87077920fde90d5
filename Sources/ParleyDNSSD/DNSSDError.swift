import ParleyDiscovery

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An error reported by the system's DNS-SD library (`dns_sd.h`): the C error code, made matchable, with the call
/// that failed.
///
/// ```swift
/// if case .advertisementFailed(let failure) = event { … }   // the reason, backend-neutral
/// do { … } catch let error as DNSSDError where error.code == .nameConflict { … }
/// ```
public struct DNSSDError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A `kDNSServiceErr_*` code of `dns_sd.h`. Codes this file does not name still keep their raw value.
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: Int32
        public init(rawValue: Int32) { self.rawValue = rawValue }

        /// Avahi's compatibility library answers this for most failures of its own, including "avahi-daemon is
        /// not running" and "the system D-Bus is not reachable".
        public static let unknown = Code(rawValue: -65537)
        public static let noSuchName = Code(rawValue: -65538)
        public static let noMemory = Code(rawValue: -65539)
        public static let badParameter = Code(rawValue: -65540)
        public static let badReference = Code(rawValue: -65541)
        public static let badState = Code(rawValue: -65542)
        public static let badFlags = Code(rawValue: -65543)
        public static let unsupported = Code(rawValue: -65544)
        public static let notInitialized = Code(rawValue: -65545)
        public static let alreadyRegistered = Code(rawValue: -65547)
        public static let nameConflict = Code(rawValue: -65548)
        public static let invalid = Code(rawValue: -65549)
        public static let firewall = Code(rawValue: -65550)
        public static let incompatible = Code(rawValue: -65551)
        public static let badInterfaceIndex = Code(rawValue: -65552)
        public static let refused = Code(rawValue: -65553)
        public static let noSuchRecord = Code(rawValue: -65554)
        public static let noAuthentication = Code(rawValue: -65555)
        public static let noSuchKey = Code(rawValue: -65556)
        public static let natTraversal = Code(rawValue: -65557)
        public static let doubleNAT = Code(rawValue: -65558)
        public static let badTime = Code(rawValue: -65559)
        public static let badSignature = Code(rawValue: -65560)
        public static let badKey = Code(rawValue: -65561)
        public static let transient = Code(rawValue: -65562)
        /// Apple's: mDNSResponder is not running (or was restarted).
        public static let serviceNotRunning = Code(rawValue: -65563)
        public static let natPortMappingUnsupported = Code(rawValue: -65564)
        public static let natPortMappingDisabled = Code(rawValue: -65565)
        public static let noRouter = Code(rawValue: -65566)
        public static let pollingMode = Code(rawValue: -65567)
        public static let timeout = Code(rawValue: -65568)
        /// Apple's: the connection to mDNSResponder broke.
        public static let defunctConnection = Code(rawValue: -65569)
        /// Apple's: the system's policy forbids it, on iOS typically the Local Network permission.
        public static let policyDenied = Code(rawValue: -65570)
        public static let notPermitted = Code(rawValue: -65571)

        private static let known: [Int32: (name: String, text: String)] = [
            -65537: ("unknown", "unknown error"),
            -65538: ("noSuchName", "no such name"),
            -65539: ("noMemory", "out of memory"),
            -65540: ("badParameter", "a parameter was refused"),
            -65541: ("badReference", "invalid reference"),
            -65542: ("badState", "not possible in the current state"),
            -65543: ("badFlags", "flags not supported"),
            -65544: ("unsupported", "not supported"),
            -65545: ("notInitialized", "not initialized"),
            -65547: ("alreadyRegistered", "already registered"),
            -65548: ("nameConflict", "the name is already in use"),
            -65549: ("invalid", "invalid value"),
            -65550: ("firewall", "blocked by a firewall"),
            -65551: ("incompatible", "the client library does not match the daemon"),
            -65552: ("badInterfaceIndex", "no such interface"),
            -65553: ("refused", "refused"),
            -65554: ("noSuchRecord", "no such record"),
            -65555: ("noAuthentication", "not authenticated"),
            -65556: ("noSuchKey", "no such key"),
            -65557: ("natTraversal", "NAT traversal failed"),
            -65558: ("doubleNAT", "behind two NATs"),
            -65559: ("badTime", "clock skew"),
            -65560: ("badSignature", "bad signature"),
            -65561: ("badKey", "bad key"),
            -65562: ("transient", "temporary failure"),
            -65563: ("serviceNotRunning", "the DNS-SD daemon is not running"),
            -65564: ("natPortMappingUnsupported", "NAT port mapping not supported"),
            -65565: ("natPortMappingDisabled", "NAT port mapping disabled"),
            -65566: ("noRouter", "no router"),
            -65567: ("pollingMode", "the daemon is in polling mode"),
            -65568: ("timeout", "timed out"),
            -65569: ("defunctConnection", "the connection to the daemon broke"),
            -65570: ("policyDenied", "denied by the system's policy (on iOS: the app's Local Network permission)"),
            -65571: ("notPermitted", "not permitted"),
        ]

        /// The Swift name of the code (`nameConflict`), or `dns_sd error N` for codes without one.
        public var description: String { Self.known[rawValue]?.name ?? "dns_sd error \(rawValue)" }

        /// Whether this file names the code.
        var isNamed: Bool { Self.known[rawValue] != nil }

        /// What the code means, in words.
        public var explanation: String { Self.known[rawValue]?.text ?? "error \(rawValue)" }
    }

    public let code: Code
    /// The `dns_sd.h` function (or Parley step) that failed, e.g. `DNSServiceRegister`.
    public let operation: String

    public init(code: Code, operation: String) {
        self.code = code
        self.operation = operation
    }

    init(_ rawCode: Int32, operation: String) {
        self.init(code: Code(rawValue: rawCode), operation: operation)
    }

    public var description: String {
        code.isNamed
            ? "\(operation) failed: \(code.explanation) (\(code), \(code.rawValue))"
            : "\(operation) failed: an error dns_sd.h does not name (\(code.rawValue))"
    }
}

/// The backend could not set up the thread that talks to the daemon: a system call failed (typically for want of
/// file descriptors).
public struct DNSSDStartError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The call that failed ("pipe").
    public let call: String
    /// Its `errno`.
    public let errorNumber: Int32

    public var description: String {
        "cannot start DNS-SD discovery: \(call)() failed: \(String(cString: strerror(errorNumber))) (errno \(errorNumber)); "
            + "the process may have run out of file descriptors"
    }
}

extension AdvertisementFailure {
    /// The DNS-SD code, sorted into what a caller can act on.
    init(_ error: DNSSDError) {
        let reason: Reason
        switch error.code {
        case .nameConflict, .alreadyRegistered: reason = .nameCollision
        case .badParameter, .invalid, .badFlags, .unsupported, .badInterfaceIndex, .refused, .notPermitted, .policyDenied:
            reason = .rejected
        default: reason = .backendFailure
        }
        self.init(reason: reason, detail: error.description)
    }
}
