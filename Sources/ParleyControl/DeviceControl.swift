import Foundation
import Parley

/// parleyd's control requests about devices (pairing and paired devices), answered on its control socket only.
public enum DeviceControl {
    /// `parley.control.Devices` → ``DeviceList``.
    public struct Devices: Codable, Sendable, Hashable, NamedMessage {
        public static let messageType = "parley.control.Devices"
        public init() {}
    }

    /// `parley.control.PairAccept` → ``DeviceList``: a person accepts a pending request. `device` is its fingerprint,
    /// or a unique beginning of it (dashes and case ignored).
    public struct PairAccept: Codable, Sendable, Hashable, NamedMessage {
        public static let messageType = "parley.control.PairAccept"
        public var device: String
        public init(device: String) { self.device = device }
    }

    /// `parley.control.PairRefuse` → ``DeviceList``: a person refuses a pending request; the device may ask again.
    public struct PairRefuse: Codable, Sendable, Hashable, NamedMessage {
        public static let messageType = "parley.control.PairRefuse"
        public var device: String
        public init(device: String) { self.device = device }
    }

    /// `parley.control.Unpair` → ``DeviceList``: a paired device is taken back; its open connections close at once.
    public struct Unpair: Codable, Sendable, Hashable, NamedMessage {
        public static let messageType = "parley.control.Unpair"
        public var device: String
        public init(device: String) { self.device = device }
    }

    /// parleyd's own device, the devices paired with it and the requests waiting for a person.
    public struct DeviceList: Codable, Sendable, Hashable, NamedMessage {
        public static let messageType = "parley.control.DeviceList"
        /// parleyd's fingerprint (full form).
        public var fingerprint: String
        public var paired: [PairedDevice]
        public var pending: [PairingRequest]
        /// What the request did, for a person: "paired app (ABCD-…)", "closed 1 connection". Nil for a listing.
        public var done: String?

        public init(fingerprint: String, paired: [PairedDevice], pending: [PairingRequest], done: String? = nil) {
            self.fingerprint = fingerprint
            self.paired = paired
            self.pending = pending
            self.done = done
        }
    }

    public struct PairedDevice: Codable, Sendable, Hashable {
        /// Full form.
        public var fingerprint: String
        /// The name its hello gave when it was paired, then when it last connected.
        public var name: String
        public var pairedAt: Date
        public var lastSeen: Date?
        /// Whether it is connected now.
        public var connected: Bool

        public init(fingerprint: String, name: String, pairedAt: Date, lastSeen: Date?, connected: Bool) {
            self.fingerprint = fingerprint
            self.name = name
            self.pairedAt = pairedAt
            self.lastSeen = lastSeen
            self.connected = connected
        }
    }

    public struct PairingRequest: Codable, Sendable, Hashable {
        public var fingerprint: String
        /// What its hello claimed (unchecked).
        public var name: String
        public var peerID: String?
        public var address: String
        /// The six digits both sides show, as `123 456`.
        public var code: String
        public var requestedAt: Date
        /// How many times it connected while waiting.
        public var attempts: Int

        public init(fingerprint: String, name: String, peerID: String?, address: String, code: String, requestedAt: Date, attempts: Int) {
            self.fingerprint = fingerprint
            self.name = name
            self.peerID = peerID
            self.address = address
            self.code = code
            self.requestedAt = requestedAt
            self.attempts = attempts
        }
    }
}
