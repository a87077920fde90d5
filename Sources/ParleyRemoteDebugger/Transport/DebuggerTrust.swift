import Logging
import Parley

/// Which debuggers an app sends to. `.paired` unless the app says otherwise (the original framing, which cannot
/// tell debuggers apart, is `.anyOpen`).
public enum DebuggerTrust: Sendable, Hashable, CustomStringConvertible {
    /// Every debugger found (or the one at the endpoint), in the clear or with the shared secret, without a device
    /// identity: anyone on the LAN who runs a debugger receives the app's records.
    case anyOpen
    /// The debuggers this app paired with, over TLS with its device certificate. While it has paired with none,
    /// the one advertised under the name `PARLEY_DEBUGGER` gives (when set); otherwise every debugger found is
    /// asked to pair. Nothing is sent until a person accepts on a debugger, which is pinned from then on.
    case paired
    /// The debugger advertised under this DNS-SD instance name: asked to pair on first use (the person named it),
    /// then pinned by its fingerprint like ``paired``.
    case named(String)

    public var description: String {
        switch self {
        case .anyOpen: "any open debugger"
        case .paired: "paired debuggers"
        case .named(let name): "the debugger named \(name)"
        }
    }

    /// What a client with this trust sends through: nil for `.anyOpen`; otherwise the app's identity and the
    /// debuggers it paired with, from `directory` (nil: the app's default device directory). `.paired` reads
    /// `PARLEY_DEBUGGER` here (``PairedDebuggers/wanted(named:environment:)``), so that every client of one app
    /// reads it the same way.
    func pairedDebuggers(directory: String?, appName: String, logger: Logger) throws(DeviceIdentityError) -> PairedDebuggers? {
        let named: String?
        switch self {
        case .anyOpen: return nil
        case .paired: named = nil
        case .named(let name): named = name
        }
        return try PairedDebuggers(directory: directory, name: appName, wanted: PairedDebuggers.wanted(named: named), logger: logger)
    }
}
