internal import CAvahi
public import ParleyDiscovery

/// An error reported by Avahi: the C error code, made matchable, with Avahi's own text and the operation that failed.
///
/// ```swift
/// do { try discovery.advertise(ad) } catch let error as AvahiError where error.code == .invalidServiceName { … }
/// ```
public struct AvahiError: Error, Sendable, Hashable, CustomStringConvertible {
    /// An Avahi error code (`AVAHI_ERR_*` in `avahi-common/error.h`). Codes this file does not name still keep
    /// their raw value.
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: Int32
        public init(rawValue: Int32) { self.rawValue = rawValue }

        public static let failure = Code(rawValue: -1)
        public static let badState = Code(rawValue: -2)
        public static let invalidHostName = Code(rawValue: -3)
        public static let invalidDomainName = Code(rawValue: -4)
        public static let noNetwork = Code(rawValue: -5)
        public static let invalidTTL = Code(rawValue: -6)
        public static let isPattern = Code(rawValue: -7)
        public static let collision = Code(rawValue: -8)
        public static let invalidRecord = Code(rawValue: -9)
        public static let invalidServiceName = Code(rawValue: -10)
        public static let invalidServiceType = Code(rawValue: -11)
        public static let invalidPort = Code(rawValue: -12)
        public static let invalidKey = Code(rawValue: -13)
        public static let invalidAddress = Code(rawValue: -14)
        public static let timeout = Code(rawValue: -15)
        public static let tooManyClients = Code(rawValue: -16)
        public static let tooManyObjects = Code(rawValue: -17)
        public static let tooManyEntries = Code(rawValue: -18)
        public static let os = Code(rawValue: -19)
        public static let accessDenied = Code(rawValue: -20)
        public static let invalidOperation = Code(rawValue: -21)
        public static let dbusError = Code(rawValue: -22)
        public static let disconnected = Code(rawValue: -23)
        public static let noMemory = Code(rawValue: -24)
        public static let invalidObject = Code(rawValue: -25)
        public static let noDaemon = Code(rawValue: -26)
        public static let invalidInterface = Code(rawValue: -27)
        public static let invalidProtocol = Code(rawValue: -28)
        public static let invalidFlags = Code(rawValue: -29)
        public static let notFound = Code(rawValue: -30)
        /// The DNS server answered NXDOMAIN (wide-area browsing of a name that does not exist).
        public static let dnsNXDomain = Code(rawValue: -38)
        public static let invalidConfig = Code(rawValue: -31)
        public static let versionMismatch = Code(rawValue: -32)
        public static let invalidServiceSubtype = Code(rawValue: -33)
        public static let invalidPacket = Code(rawValue: -34)
        public static let notSupported = Code(rawValue: -49)
        public static let notPermitted = Code(rawValue: -50)
        public static let invalidArgument = Code(rawValue: -51)
        public static let isEmpty = Code(rawValue: -52)
        public static let noChange = Code(rawValue: -53)

        private static let names: [Int32: String] = [
            -1: "failure", -2: "badState", -3: "invalidHostName", -4: "invalidDomainName", -5: "noNetwork",
            -6: "invalidTTL", -7: "isPattern", -8: "collision", -9: "invalidRecord", -10: "invalidServiceName",
            -11: "invalidServiceType", -12: "invalidPort", -13: "invalidKey", -14: "invalidAddress", -15: "timeout",
            -16: "tooManyClients", -17: "tooManyObjects", -18: "tooManyEntries", -19: "os", -20: "accessDenied",
            -21: "invalidOperation", -22: "dbusError", -23: "disconnected", -24: "noMemory", -25: "invalidObject",
            -26: "noDaemon", -27: "invalidInterface", -28: "invalidProtocol", -29: "invalidFlags", -30: "notFound",
            -31: "invalidConfig", -32: "versionMismatch", -33: "invalidServiceSubtype", -34: "invalidPacket",
            -49: "notSupported", -50: "notPermitted", -51: "invalidArgument", -52: "isEmpty", -53: "noChange",
        ]

        /// The Swift name of the code (`collision`), or `avahi error N` for codes without one.
        public var description: String { Self.names[rawValue] ?? "avahi error \(rawValue)" }
    }

    public let code: Code
    /// The Avahi function (or Parley step) that failed, e.g. `avahi_entry_group_add_service_strlst`.
    public let operation: String
    /// Avahi's own text for the code (`avahi_strerror`), e.g. "Local name collision".
    public let message: String

    public init(code: Code, operation: String, message: String) {
        self.code = code
        self.operation = operation
        self.message = message
    }

    /// Wraps a negative return value or `avahi_client_errno` result.
    init(_ rawCode: Int32, operation: String) {
        self.code = Code(rawValue: rawCode)
        self.operation = operation
        self.message = String(cString: avahi_strerror(rawCode))
    }

    public var description: String { "\(operation) failed: \(message) (\(code), \(code.rawValue))" }
}

extension AdvertisementFailure {
    /// Avahi's code, sorted into what a caller can act on.
    init(_ error: AvahiError) {
        let reason: Reason
        switch error.code {
        case .collision: reason = .nameCollision
        case .invalidServiceName, .invalidServiceType, .invalidServiceSubtype, .invalidHostName, .invalidDomainName,
            .invalidRecord, .invalidKey, .invalidPort, .accessDenied, .notPermitted:
            reason = .rejected
        default: reason = .backendFailure
        }
        self.init(reason: reason, detail: error.description)
    }
}

extension DiscoveryBackendFactory {
    /// Discovery through the system's avahi-daemon (over D-Bus), with Avahi's C client library.
    public static var avahi: DiscoveryBackendFactory {
        DiscoveryBackendFactory(name: "avahi") { logger in AvahiDiscovery(logger: logger) }
    }
}
