import Foundation
import NIOCore

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

    /// The largest hello body accepted (64 KiB): a name, a few capabilities and about a thousand type names.
    public static let maximumBodySize = 64 * 1024
    /// A peer's name is a DNS-SD instance label: at most 63 bytes of UTF-8.
    public static let maximumNameLength = 63

    /// A hello body read for what it says about its sender (a refused device's request), or nil when it is too
    /// large, not a hello, or not acceptable (``problem``).
    public init?(readingAtMost body: ByteBuffer) {
        guard body.readableBytes <= Self.maximumBodySize,
            let hello = try? JSONDecoder().decode(Hello.self, from: Data(body.readableBytesView)), hello.problem == nil
        else { return nil }
        self = hello
    }

    /// What makes this hello unacceptable, or nil: a name longer than a DNS-SD label, a type name longer than the
    /// protocol allows.
    public var problem: String? {
        if name.utf8.count > Self.maximumNameLength {
            return "the name is \(name.utf8.count) bytes; at most \(Self.maximumNameLength) (a DNS-SD label)"
        }
        if let long = accepts.first(where: { $0.utf8.isEmpty || $0.utf8.count > FrameLayout.maximumTypeNameLength }) {
            return "an accepted type name is \(long.utf8.count) bytes; 1 to \(FrameLayout.maximumTypeNameLength) are allowed"
        }
        return nil
    }

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
