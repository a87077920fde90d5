import Foundation
import Logging
import ParleyDiscovery
import ParleySecurity
import Synchronization

/// The debuggers (parleyds) a device paired with, kept beside its device identity (`paired-debuggers.json`), and
/// the transceiver settings that dial only them: what an app's debugger client, its exporter and `parleyctl
/// --direct --paired` share. While none is paired, the device dials the one it wants (or every debugger found),
/// which asks a person to accept; the first that accepts is pinned.
public final class PairedDebuggers: Sendable {
    struct Entry: Codable, Sendable {
        var fingerprint: String
        var name: String
        var pairedAt: Date
    }

    static let fileName = "paired-debuggers.json"

    public let identity: DeviceIdentity
    private let path: String
    private let wanted: String?
    private let logger: Logger
    private let entries: Mutex<[DeviceFingerprint: Entry]>
    private let saving = Mutex(())

    /// Loads (or makes) the identity of the device called `name` in `directory` (nil:
    /// ``TransceiverConfiguration/defaultDeviceDirectory(name:)``) and reads the debuggers paired so far. `wanted`
    /// is the instance name to pair with while none is paired (nil: any debugger found; see ``wanted(named:environment:)``).
    public init(directory: String?, name: String, wanted: String?, logger: Logger) throws(DeviceIdentityError) {
        let directory = directory ?? TransceiverConfiguration.defaultDeviceDirectory(name: name)
        identity = try DeviceIdentity.loadOrCreate(in: directory, name: name)
        path = directory + "/" + Self.fileName
        self.wanted = wanted
        self.logger = logger
        let list: [Entry]?
        do {
            list = try ProtectedFile.readJSON([Entry].self, at: path)
        } catch {
            throw .malformedPairedDebuggers(path: path, reason: "it is not a list of paired debuggers")
        }
        var entries: [DeviceFingerprint: Entry] = [:]
        for entry in list ?? [] {
            if let fingerprint = DeviceFingerprint(entry.fingerprint) { entries[fingerprint] = entry }
        }
        self.entries = Mutex(entries)
    }

    /// The debugger to pair with while none is paired, as a person chose it: `named` (the app's configuration,
    /// parleyctl's `--debugger`), else the environment's `PARLEY_DEBUGGER`; nil: every debugger found is asked.
    public static func wanted(named: String?, environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        if let named { return named }
        guard let name = environment["PARLEY_DEBUGGER"], !name.isEmpty else { return nil }
        return name
    }

    /// Trusted at the TLS handshake: a paired debugger; while none is paired, any debugger this app dials (which
    /// then asks a person to accept the pairing, or refuses).
    public func trusts(_ fingerprint: DeviceFingerprint) -> Bool {
        entries.withLock { $0.isEmpty || $0[fingerprint] != nil }
    }

    /// Which advertised debuggers to dial: those whose `fp` TXT key names a paired one; while none is paired, the
    /// wanted name (or every debugger) among those that advertise an `fp` at all. A node without one takes no
    /// devices: a TLS dial there could only fail.
    public func admits(_ service: DiscoveredService) -> Bool {
        guard service.peerID != nil, let advertised = service.txt[TXTRecord.ParleyKey.deviceFingerprint] else { return false }
        return entries.withLock { entries in
            guard !entries.isEmpty else { return wanted.map { $0 == service.instanceName } ?? true }
            return entries.keys.contains { $0.matches(prefix: advertised) }
        }
    }

    /// A debugger accepted this app: pinned from now on.
    public func established(_ peer: Peer, _ fingerprint: DeviceFingerprint) {
        let isNew = entries.withLock { entries in
            guard entries[fingerprint] == nil else { return false }
            entries[fingerprint] = Entry(fingerprint: fingerprint.full, name: peer.name, pairedAt: Date())
            return true
        }
        guard isNew else { return }
        logger.notice("paired with a debugger; from now on this device sends to it, and to no debugger it has not paired with", metadata: [
            "debugger": "\(peer.name)", "device": "\(fingerprint.short)",
        ])
        save()
    }

    /// Writes the list as it is now. Saves take turns, each reading the list inside its turn: two debuggers
    /// accepted at once are both in the file, whichever save ends last. Not under `entries`' lock, which TLS
    /// handshakes take on the event loops.
    private func save() {
        saving.withLock { _ in
            let list = entries.withLock { Array($0.values).sorted { $0.pairedAt < $1.pairedAt } }
            do throws(ProtectedFile.Failure) {
                try ProtectedFile.writeJSON(list, to: path)
            } catch {
                logger.warning(
                    "cannot remember the paired debugger; it asks again at the next start",
                    metadata: ["path": "\(path)", "reason": "\(ProtectedFile.writeFailureText(error))"])
            }
        }
    }

    /// Whether a debugger is paired yet.
    public var isEmpty: Bool { entries.withLock { $0.isEmpty } }

    /// The transceiver's device settings: TLS with this identity, to the debuggers trusted above. For a node that
    /// only dials (no listener): while none is paired it trusts the debugger it dials, which an acceptor must not.
    public var authentication: DeviceAuthentication {
        var authentication = DeviceAuthentication(identity: identity) { [self] fingerprint in trusts(fingerprint) }
        authentication.established = { [self] peer, fingerprint in established(peer, fingerprint) }
        return authentication
    }
}
