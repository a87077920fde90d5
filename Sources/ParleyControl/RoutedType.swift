import Parley

/// The routing prefix of the control socket: a type name `@<target>/<Type>`.
///
/// * A local client (connected over parleyd's control socket) sends `@<target>/<Type>` to have parleyd forward
///   the payload, untouched, as a `<Type>` message to LAN peers. The target is a peer id, a unique id prefix, a
///   peer name, or `*` (every connected LAN peer).
/// * parleyd forwards a LAN message nothing handles to the local clients subscribed to it as
///   `@<sender peer id>/<Type>`.
///
/// The target ends at the first `/`; the type is everything after it (it may contain `/` itself), so a target
/// can never contain `/`.
public struct RoutedType: Sendable, Hashable, CustomStringConvertible {
    /// The target meaning "every connected LAN peer".
    public static let everyPeer = "*"

    public var target: String
    public var typeName: String

    public init(target: String, typeName: String) {
        self.target = target
        self.typeName = typeName
    }

    /// Parses `@<target>/<Type>`; `nil` for a type name without the prefix, an empty target or an empty type.
    public init?(parsing wireName: String) {
        guard wireName.first == "@", let slash = wireName.firstIndex(of: "/") else { return nil }
        let target = wireName[wireName.index(after: wireName.startIndex)..<slash]
        let typeName = wireName[wireName.index(after: slash)...]
        guard !target.isEmpty, !typeName.isEmpty else { return nil }
        self.init(target: String(target), typeName: String(typeName))
    }

    /// A message from `sender`, as parleyd forwards it to a local client.
    public init(from sender: PeerID, typeName: String) {
        self.init(target: sender.rawValue, typeName: typeName)
    }

    /// `@<target>/<Type>`.
    public var wireName: String { "@\(target)/\(typeName)" }
    public var description: String { wireName }
}
