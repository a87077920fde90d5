import Foundation
import Logging
import Parley
import ParleyAvahi
import ParleyControl
import Synchronization

/// The transceiver `--direct` runs inside parleyctl: an ephemeral identity, discovery with auto-connect (or the
/// `--peer` endpoints), and a listener only for `listen`.
struct DirectNode {
    let options: DirectOptions
    let transceiver: Transceiver

    /// - Parameter listenPort: `nil` for no listener (send, peers); a port (0: any) for `listen`, which also
    ///   advertises itself so that discovering peers connect to it.
    ///   `awaitsReply`: see ``TransceiverConfiguration/forOneRequest()``.
    init(_ options: DirectOptions, listenPort: Int? = nil, awaitsReply: Bool = false) throws {
        bootstrapLogging(options.logLevel)
        self.options = options
        var configuration = TransceiverConfiguration(
            name: options.name, identity: .ephemeral, listenHost: listenPort == nil ? nil : "::", port: listenPort ?? 0
        )
        configuration.staticPeers = options.endpoints
        if awaitsReply { configuration.forOneRequest() }
        if options.usesDiscovery {
            configuration.discovery = DiscoveryConfiguration(
                backend: .avahi,
                serviceType: options.serviceType, instanceName: listenPort == nil ? nil : options.name,
                advertise: listenPort != nil, autoConnect: .all
            )
        }
        do {
            configuration.sharedSecret = try options.secretFile.map { path throws(SharedSecretError) in try SharedSecret(contentsOfFile: path) }
        } catch {
            throw CtlFailure.usage("--secret-file: \(error)")
        }
        configuration.logger = Logger(label: "parleyctl")
        if options.connectsAsDevice {
            guard listenPort == nil else {
                // Paired debuggers are whom this tool dials; as a listener it would take any device in while none is paired.
                throw CtlFailure.usage("--paired is for the commands that dial parleyds (send, peers); listen --direct takes peers in the clear or with --secret-file")
            }
            let paired: PairedDebuggers
            do {
                // The debugger wanted is read as an app's `.paired` trust reads it: --debugger, else PARLEY_DEBUGGER.
                paired = try PairedDebuggers(
                    directory: options.deviceDirectory, name: options.name, wanted: PairedDebuggers.wanted(named: options.debugger),
                    logger: configuration.logger
                )
            } catch {
                throw CtlFailure.usage("--paired: \(error)")
            }
            var devices = paired.authentication
            let told = PairingPrompt(device: paired.identity.fingerprint)
            devices.pairingRequested = { code, message in told.say(code: code, message: message) }
            configuration.devices = devices
            configuration.discovery?.autoConnect = .matching { paired.admits($0) }
        }
        transceiver = Transceiver(configuration: configuration)
    }

    /// Runs `body` with the transceiver started, and always stops it afterwards (queued messages get their
    /// bounded time to leave).
    func run<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        try await transceiver.start()
        do {
            let result = try await body()
            await transceiver.stop()
            return result
        } catch {
            await transceiver.stop()
            throw error
        }
    }

    /// The peer gate: the first connected Parley peer that is `wanted`, within `timeout`. Fails with exit status 3
    /// and a message naming what was waited for.
    func waitForPeer(_ wanted: WantedPeer, timeout: Duration) async throws -> Peer {
        let description = describe(wanted)
        do {
            let peer = try await transceiver.waitForPeer(timeout: timeout, description: description) { peer in
                wanted.matches(id: peer.id.rawValue, name: peer.name, accepts: peer.accepts)
            }
            let connected = transceiver.peers.filter { !$0.isLocal }
            if let choice = wanted.ambiguity(among: connected, id: \.id.rawValue, name: \.name, accepts: \.accepts) {
                throw CtlFailure.usage(choice)
            }
            return peer
        } catch let error as TransceiverError {
            guard case .noPeer = error else { throw error }
            var message = "\(error)"
            if case .daemonUnavailable(let reason) = transceiver.discoveryStatus {
                message += " (discovery is off: avahi-daemon unavailable: \(reason); try --peer HOST:PORT)"
            }
            let others = transceiver.peers
            if !others.isEmpty {
                message += "; connected: " + others.map(\.label).joined(separator: ", ")
            }
            throw CtlFailure(.noPeer, message)
        }
    }

    private func describe(_ wanted: WantedPeer) -> String {
        var text = wanted.description
        if !options.endpoints.isEmpty {
            text += " at " + options.endpoints.map(\.description).joined(separator: ", ")
        } else if options.usesDiscovery {
            text += " discovered on \(options.serviceType)"
        } else {
            text += " (discovery off and no --peer given)"
        }
        return text
    }
}

/// Says on standard error, once per code, that a debugger asked for pairing: the code to compare and what its
/// person does. The dial that met it failed; parleyctl keeps waiting (and dialling) until its timeout, so an accept
/// in the meantime lets it through.
final class PairingPrompt: Sendable {
    private let device: DeviceFingerprint
    private let said = Mutex<Set<PairingCode>>([])

    init(device: DeviceFingerprint) { self.device = device }

    func say(code: PairingCode, message: String) {
        guard said.withLock({ $0.insert(code).inserted }) else { return }
        FileHandle.standardError.write(Data("""
            parleyctl: not paired yet; this device is \(device.short), the code here is \(code): accept on the debugger \
            only if it shows the same (it says: \(message)); waiting for the accept as long as parleyctl waits for a \
            peer (--wait-peer, --wait)

            """.utf8))
    }
}

/// Log lines go to standard error at `level`; bootstrapped once per process.
func bootstrapLogging(_ level: String) {
    let level = Logger.Level(rawValue: level) ?? .error
    LoggingSystem.bootstrap { label in
        var handler = StreamLogHandler.standardError(label: label)
        handler.logLevel = level
        return handler
    }
}

/// Resolves a message type name given on the command line against the types a peer says it accepts: an exact
/// match first, then a unique match on the part after a '.' (`AddItemCommand` → `listr.AddItemCommand`), else
/// the name as given.
func resolveTypeName(_ given: String, accepts: [String]) throws -> String {
    if accepts.contains(given) { return given }
    let candidates = accepts.filter { $0.hasSuffix("." + given) }
    switch candidates.count {
    case 0: return given
    case 1: return candidates[0]
    default:
        throw CtlFailure.usage(
            "message type \"\(given)\" is ambiguous for this peer: \(candidates.sorted().joined(separator: ", ")); give the full name"
        )
    }
}

