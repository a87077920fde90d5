import Foundation

/// The JSON body of a hello frame: who the sender is and what it can do.
public struct Hello: Codable, Sendable, Hashable {
    /// Stable per installation; a UUID string.
    public var peerID: String
    /// Human-readable name, e.g. "kitchen-tablet".
    public var name: String
    /// Optional protocol features the sender supports, e.g. "heartbeat". Unknown entries are ignored.
    public var capabilities: [String]
    /// The message type names the sender has handlers for, so tools can resolve short names.
    public var accepts: [String]
    /// With a shared secret: the authentication scheme, the sender's challenge and its ephemeral key. Absent in
    /// open mode.
    public var auth: AuthOffer?

    public init(peerID: String, name: String, capabilities: [String] = [], accepts: [String] = [], auth: AuthOffer? = nil) {
        self.peerID = peerID
        self.name = name
        self.capabilities = capabilities
        self.accepts = accepts
        self.auth = auth
    }

    /// What an authenticating side contributes to the handshake; the byte strings are base64 text.
    public struct AuthOffer: Codable, Sendable, Hashable {
        /// The authentication and encryption scheme, e.g. `psk-x25519-chachapoly-v1`.
        public var scheme: String
        /// A fresh random challenge (32 bytes).
        public var nonce: String
        /// A fresh ephemeral public key for the key agreement (32 bytes for X25519).
        public var key: String
        public init(scheme: String, nonce: String, key: String) {
            self.scheme = scheme
            self.nonce = nonce
            self.key = key
        }
    }
}
