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
    /// Reserved for authentication: the scheme and the sender's challenge. Absent in open mode.
    public var auth: AuthOffer?

    public init(peerID: String, name: String, capabilities: [String] = [], accepts: [String] = [], auth: AuthOffer? = nil) {
        self.peerID = peerID
        self.name = name
        self.capabilities = capabilities
        self.accepts = accepts
        self.auth = auth
    }

    public struct AuthOffer: Codable, Sendable, Hashable {
        public var scheme: String
        public var nonce: String
        public init(scheme: String, nonce: String) {
            self.scheme = scheme
            self.nonce = nonce
        }
    }
}
