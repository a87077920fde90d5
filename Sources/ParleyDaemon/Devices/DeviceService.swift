import Parley
import ParleyControl
import ParleyWeb

/// What a person does about devices, from `parleyctl devices`, `pair` and `unpair` on the control socket and
/// from the web debugger's Peers page: the same decisions, the same words.
struct DeviceService: Sendable {
    let book: DeviceBook
    let transceiver: Transceiver

    func install() {
        transceiver.respond(to: DeviceControl.Devices.self, localOnly: true) { [self] _, _ in
            book.list(connected: connected())
        }
        transceiver.respond(to: DeviceControl.PairAccept.self, localOnly: true) { [self] request, _ in
            book.list(connected: connected(), done: try coded { () throws(DeviceBookError) in try decide(.accept, device: request.device) })
        }
        transceiver.respond(to: DeviceControl.PairRefuse.self, localOnly: true) { [self] request, _ in
            book.list(connected: connected(), done: try coded { () throws(DeviceBookError) in try decide(.refuse, device: request.device) })
        }
        transceiver.respond(to: DeviceControl.Unpair.self, localOnly: true) { [self] request, _ in
            book.list(connected: connected(), done: try coded { () throws(DeviceBookError) in try decide(.unpair, device: request.device) })
        }
    }

    /// Accepts or refuses a pairing request, or takes a paired device back (closing its open connections at once).
    func decide(_ decision: WebDeviceDecision, device: String) throws(DeviceBookError) -> String {
        switch decision {
        case .accept:
            let paired = try book.accept(device)
            return "paired \(paired.name) (\(paired.fingerprint.prefix(19))); it gets in at its next connection"
        case .refuse:
            let refused = try book.refuse(device)
            return "refused \(refused.name ?? "?") (\(refused.fingerprint.short))"
        case .unpair:
            let (fingerprint, paired, saveFailure) = try book.unpair(device)
            let closed = transceiver.disconnect(device: fingerprint, message: "this device was unpaired on \(transceiver.configuration.name)")
            if let saveFailure { throw saveFailure }
            return "unpaired \(paired.name) (\(fingerprint.short)); \(closed) open \(closed == 1 ? "connection" : "connections") closed"
        }
    }

    /// The web debugger's view of ``DeviceBook/list(connected:done:)``.
    func webDevices() -> WebDevices {
        let list = book.list(connected: connected())
        return WebDevices(
            fingerprint: list.fingerprint,
            paired: list.paired.map { .init(fingerprint: $0.fingerprint, name: $0.name, pairedAt: $0.pairedAt, lastSeen: $0.lastSeen, connected: $0.connected) },
            pending: list.pending.map {
                .init(fingerprint: $0.fingerprint, name: $0.name, address: $0.address, code: $0.code, requestedAt: $0.requestedAt, attempts: $0.attempts)
            }
        )
    }

    private func connected() -> Set<DeviceFingerprint> { Set(transceiver.peers.compactMap(\.device)) }

    private func coded<Value>(_ body: () throws(DeviceBookError) -> Value) throws -> Value {
        do {
            return try body()
        } catch {
            throw ControlRefusal(code: error.controlCode, description: error.description)
        }
    }
}
