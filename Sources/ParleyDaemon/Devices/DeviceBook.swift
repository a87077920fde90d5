import Foundation
import Logging
import Parley
import ParleyControl
import Synchronization

/// The devices parleyd is paired with (kept in `devices.json` in its data directory) and the pairing requests
/// waiting for a person (in memory: a request is made again by the device's next connection). Its answers are
/// what the transceiver asks of ``DeviceAuthentication``.
final class DeviceBook: Sendable {
    let identity: DeviceIdentity
    private let path: String
    private let logger: Logger
    private let state: Mutex<State>
    private let saving = Mutex(())
    /// Ten requests a second logged at most after a burst of twenty; the rest counted in one line.
    private let throttle = LogThrottle(perSecond: 10, burst: 20)
    /// Called after a request arrives or a decision is made.
    private let changed = Mutex<(@Sendable () -> Void)?>(nil)

    func onChange(_ action: @escaping @Sendable () -> Void) { changed.withLock { $0 = action } }
    private func noteChange() { changed.withLock { $0 }?() }

    /// Requests kept at most, in all and from one host: a flood of new certificates pushes out the oldest requests
    /// (its own first), never a paired device.
    static let maximumPending = 32
    static let maximumPendingPerHost = 4
    static let fileName = "devices.json"

    struct Paired: Codable, Sendable {
        var fingerprint: String
        var name: String
        var pairedAt: Date
        var lastSeen: Date?
    }

    private struct Pending {
        var request: DeviceRequest
        var requestedAt: Date
        var attempts: Int
    }

    private struct State {
        var paired: [DeviceFingerprint: Paired]
        var pending: [DeviceFingerprint: Pending] = [:]
    }

    private struct File: Codable {
        var paired: [Paired]
    }

    /// Reads the paired devices of `directory`; none if it has no file yet.
    init(directory: String, identity: DeviceIdentity, logger: Logger) throws(DeviceBookError) {
        self.identity = identity
        self.logger = logger
        path = directory + "/" + Self.fileName
        var paired: [DeviceFingerprint: Paired] = [:]
        let stored: File?
        do {
            stored = try ProtectedFile.readJSON(File.self, at: path)
        } catch {
            throw .malformed(path: path, reason: "\(error)")
        }
        for device in stored?.paired ?? [] {
            guard let fingerprint = DeviceFingerprint(device.fingerprint) else {
                throw .malformed(path: path, reason: "\"\(device.fingerprint.prefix(80))\" is not a device fingerprint")
            }
            paired[fingerprint] = device
        }
        state = Mutex(State(paired: paired))
    }

    /// The transceiver's view: trust the paired devices, record a request for any other, and let peers in the
    /// clear meet the node's other mode.
    var authentication: DeviceAuthentication {
        var authentication = DeviceAuthentication(identity: identity, allowsCleartext: true) { [self] fingerprint in trusts(fingerprint) }
        authentication.untrusted = { [self] request in requested(request) }
        // Devices dial parleyd; what parleyd dials (static peers, apps found advertising) it reaches as before.
        authentication.dialsDevices = false
        return authentication
    }

    func trusts(_ fingerprint: DeviceFingerprint) -> Bool {
        state.withLock { state in
            guard state.paired[fingerprint] != nil else { return false }
            state.paired[fingerprint]?.lastSeen = Date()
            return true
        }
    }

    /// Records the request of an unpaired device and returns what the device is told.
    func requested(_ request: DeviceRequest) -> String {
        let isNew = state.withLock { state in
            if var pending = state.pending[request.fingerprint] {
                pending.request = request
                pending.attempts += 1
                state.pending[request.fingerprint] = pending
                return false
            }
            // Room is made at the expense of the machine asking most: one host making fresh certificates in a loop
            // replaces its own requests, not another device's that a person is about to accept.
            let fromHost = state.pending.filter { $0.value.request.host == request.host }
            let crowd: [DeviceFingerprint: Pending]
            if fromHost.count >= Self.maximumPendingPerHost {
                crowd = fromHost
            } else if state.pending.count >= Self.maximumPending {
                crowd = state.pending
            } else {
                crowd = [:]
            }
            if let oldest = crowd.min(by: { $0.value.requestedAt < $1.value.requestedAt }) {
                state.pending.removeValue(forKey: oldest.key)
            }
            state.pending[request.fingerprint] = Pending(request: request, requestedAt: Date(), attempts: 1)
            return true
        }
        let accept = "parleyctl pair accept \(request.fingerprint.short)"
        noteChange()
        if isNew {
            // Throttled: a host making fresh certificates in a loop asks anew with each.
            throttle.log(
                .notice, "a device asks to pair; accept it only if it shows the same code",
                metadata: [
                    "device": "\(request.fingerprint.short)", "name": "\(request.name ?? "?")", "address": "\(request.address)",
                    "code": "\(request.code)", "accept": "\(accept)",
                ],
                to: logger
            )
        }
        return "pairing requested: this debugger (\(identity.fingerprint.short)) shows the code \(request.code); a person there accepts it with `\(accept)`"
    }

    /// A person accepts a pending request: the device is paired from now on (and its next connection gets in).
    func accept(_ prefix: String) throws(DeviceBookError) -> Paired {
        let paired = try state.withLock { state throws(DeviceBookError) in
            let fingerprint = try Self.find(prefix, among: state.pending.mapValues { $0.request.name ?? "?" })
            let request = state.pending.removeValue(forKey: fingerprint)!.request
            let paired = Paired(fingerprint: fingerprint.full, name: request.name ?? "?", pairedAt: Date(), lastSeen: nil)
            state.paired[fingerprint] = paired
            return paired
        }
        try save()
        noteChange()
        logger.notice("device paired", metadata: ["device": "\(paired.fingerprint.prefix(19))", "name": "\(paired.name)"])
        return paired
    }

    /// A person refuses a pending request; the device's next connection asks again.
    func refuse(_ prefix: String) throws(DeviceBookError) -> DeviceRequest {
        let request = try state.withLock { state throws(DeviceBookError) in
            let fingerprint = try Self.find(prefix, among: state.pending.mapValues { $0.request.name ?? "?" })
            return state.pending.removeValue(forKey: fingerprint)!.request
        }
        noteChange()
        logger.notice("pairing request refused", metadata: ["device": "\(request.fingerprint.short)", "name": "\(request.name ?? "?")"])
        return request
    }

    /// Takes a paired device back: it is not trusted from the moment this returns, even when the file cannot be
    /// written (`saveFailure` then says why; the caller closes the device's connections first and reports it after).
    func unpair(_ prefix: String) throws(DeviceBookError) -> (fingerprint: DeviceFingerprint, paired: Paired, saveFailure: DeviceBookError?) {
        let (fingerprint, paired) = try state.withLock { state throws(DeviceBookError) in
            let fingerprint = try Self.find(prefix, among: state.paired.mapValues(\.name))
            return (fingerprint, state.paired.removeValue(forKey: fingerprint)!)
        }
        var saveFailure: DeviceBookError?
        do { try save() } catch { saveFailure = error }
        noteChange()
        logger.notice("device unpaired", metadata: ["device": "\(fingerprint.short)", "name": "\(paired.name)"])
        return (fingerprint, paired, saveFailure)
    }

    /// Everything, for `parleyctl devices` and `parleyctl pair`.
    func list(connected: Set<DeviceFingerprint>, done: String? = nil) -> DeviceControl.DeviceList {
        state.withLock { state in
            DeviceControl.DeviceList(
                fingerprint: identity.fingerprint.full,
                paired: state.paired.sorted { $0.value.pairedAt < $1.value.pairedAt }.map { fingerprint, device in
                    DeviceControl.PairedDevice(
                        fingerprint: device.fingerprint, name: device.name, pairedAt: device.pairedAt, lastSeen: device.lastSeen,
                        connected: connected.contains(fingerprint))
                },
                pending: state.pending.values.sorted { $0.requestedAt < $1.requestedAt }.map { pending in
                    DeviceControl.PairingRequest(
                        fingerprint: pending.request.fingerprint.full, name: pending.request.name ?? "?",
                        peerID: pending.request.peerID?.rawValue, address: pending.request.address, code: "\(pending.request.code)",
                        requestedAt: pending.requestedAt, attempts: pending.attempts)
                },
                done: done
            )
        }
    }

    /// Writes the paired devices (with when each was last seen): whole or not at all, owner-only.
    /// Saves run one at a time, each writing the list as it is when its turn comes, so two decisions made at once
    /// cannot leave the older list on disk.
    func save() throws(DeviceBookError) {
        try saving.withLock { _ throws(DeviceBookError) in
            let file = state.withLock { File(paired: $0.paired.values.sorted { $0.pairedAt < $1.pairedAt }) }
            do throws(ProtectedFile.Failure) {
                try ProtectedFile.writeJSON(file, to: path)
            } catch {
                throw .cannotSave(path: path, reason: ProtectedFile.writeFailureText(error))
            }
        }
    }

    /// The one device whose fingerprint begins with `prefix`.
    private static func find(_ prefix: String, among devices: [DeviceFingerprint: String]) throws(DeviceBookError) -> DeviceFingerprint {
        let matching = devices.keys.filter { $0.matches(prefix: prefix) }
        guard let first = matching.first else { throw .noSuchDevice(prefix) }
        guard matching.count == 1 else {
            throw .ambiguous(prefix, matching.sorted().map { "\($0.short) (\(devices[$0] ?? "?"))" })
        }
        return first
    }
}

/// What went wrong with parleyd's devices, each saying what to do.
enum DeviceBookError: Error, Sendable, CustomStringConvertible {
    case noSuchDevice(String)
    case ambiguous(String, [String])
    case malformed(path: String, reason: String)
    case cannotSave(path: String, reason: String)

    var description: String {
        switch self {
        case .noSuchDevice(let prefix):
            "no device's fingerprint begins with \(prefix) (`parleyctl devices` lists them, `parleyctl pair` the requests)"
        case .ambiguous(let prefix, let devices):
            "\(prefix) begins several devices' fingerprints: \(devices.joined(separator: ", ")); give more of it"
        case .malformed(let path, let reason):
            "\(path) does not list paired devices: \(reason); fix it or remove it (every device then pairs again)"
        case .cannotSave(let path, let reason):
            "cannot write \(path): \(reason); the change holds until parleyd stops and is lost then (check the data directory's owner and free space)"
        }
    }

    var controlCode: ControlErrorCode {
        switch self {
        case .noSuchDevice: .noSuchDevice
        case .ambiguous: .ambiguousDevice
        case .malformed, .cannotSave: .storageFailed
        }
    }
}
