import Foundation
import Logging
import Parley
import Synchronization

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
    /// debuggers it paired with, from `directory` (nil: the app's default device directory). Resolved against the
    /// environment here, so that every client of one app reads `PARLEY_DEBUGGER` the same way.
    func pairedDebuggers(directory: String?, appName: String, logger: Logger) throws(DeviceIdentityError) -> PairedDebuggers? {
        let trust = resolved()
        guard trust != .anyOpen else { return nil }
        let wanted: String? = if case .named(let name) = trust { name } else { nil }
        return try PairedDebuggers(
            directory: directory ?? TransceiverConfiguration.defaultDeviceDirectory(name: appName), appName: appName, wanted: wanted, logger: logger)
    }

    /// `.paired` with `PARLEY_DEBUGGER` set is `.named` that name.
    func resolved(environment: [String: String] = ProcessInfo.processInfo.environment) -> DebuggerTrust {
        if case .paired = self, let name = environment["PARLEY_DEBUGGER"], !name.isEmpty { return .named(name) }
        return self
    }
}

/// The debuggers an app paired with, kept beside its device identity (`paired-debuggers.json`), and the
/// transceiver settings that send only to them.
final class PairedDebuggers: Sendable {
    struct Entry: Codable, Sendable {
        var fingerprint: String
        var name: String
        var pairedAt: Date
    }

    static let fileName = "paired-debuggers.json"

    let identity: DeviceIdentity
    private let path: String
    private let wanted: String?
    private let logger: Logger
    private let entries: Mutex<[DeviceFingerprint: Entry]>

    /// Loads (or makes) the identity in `directory` and reads the debuggers paired so far. `wanted` is the instance
    /// name to pair with while none is paired (nil: any debugger found).
    init(directory: String, appName: String, wanted: String?, logger: Logger) throws(DeviceIdentityError) {
        identity = try DeviceIdentity.loadOrCreate(in: directory, name: appName)
        path = directory + "/" + Self.fileName
        self.wanted = wanted
        self.logger = logger
        var entries: [DeviceFingerprint: Entry] = [:]
        if let data = FileManager.default.contents(atPath: path) {
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601
            guard let list = try? decoder.decode([Entry].self, from: data) else {
                throw .malformed(path: path, reason: "it is not a list of paired debuggers; remove it to pair again")
            }
            for entry in list {
                if let fingerprint = DeviceFingerprint(entry.fingerprint) { entries[fingerprint] = entry }
            }
        }
        self.entries = Mutex(entries)
    }

    /// Trusted at the TLS handshake: a paired debugger; while none is paired, any debugger this app dials (which
    /// then asks a person to accept the pairing, or refuses).
    func trusts(_ fingerprint: DeviceFingerprint) -> Bool {
        entries.withLock { $0.isEmpty || $0[fingerprint] != nil }
    }

    /// Which advertised debuggers to dial: those whose `fp` TXT key names a paired one; while none is paired, the
    /// wanted name (or every debugger).
    func admits(_ service: DiscoveredService) -> Bool {
        guard service.peerID != nil else { return false }
        return entries.withLock { entries in
            guard !entries.isEmpty else { return wanted.map { $0 == service.instanceName } ?? true }
            guard let advertised = service.txt[TXTRecord.ParleyKey.deviceFingerprint] else { return false }
            return entries.keys.contains { $0.matches(prefix: advertised) }
        }
    }

    /// A debugger accepted this app: pinned from now on.
    func established(_ peer: Peer, _ fingerprint: DeviceFingerprint) {
        let isNew = entries.withLock { entries in
            guard entries[fingerprint] == nil else { return false }
            entries[fingerprint] = Entry(fingerprint: fingerprint.full, name: peer.name, pairedAt: Date())
            return true
        }
        guard isNew else { return }
        logger.notice("paired with a debugger; records go to it, and to no debugger it has not paired with", metadata: [
            "debugger": "\(peer.name)", "device": "\(fingerprint.short)",
        ])
        let list = entries.withLock { Array($0.values).sorted { $0.pairedAt < $1.pairedAt } }
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        do {
            try ProtectedFile.write(Array(try encoder.encode(list)), to: path, replacing: true)
        } catch {
            logger.warning("cannot remember the paired debugger; it asks again at the next start", metadata: ["path": "\(path)", "reason": "\((error as? ProtectedFile.Failure).map(ProtectedFile.writeFailureText) ?? "\(error)")"])
        }
    }

    /// The transceiver's device settings for an app: TLS with this identity, to the debuggers trusted above.
    var authentication: DeviceAuthentication {
        var authentication = DeviceAuthentication(identity: identity) { [self] fingerprint in trusts(fingerprint) }
        authentication.established = { [self] peer, fingerprint in established(peer, fingerprint) }
        return authentication
    }
}
