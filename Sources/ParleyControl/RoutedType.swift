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

/// How a target (`--to` on the command line, the `<target>` of a routed type) selects peers, in one place.
public enum PeerSelector {
    /// The peers `target` selects among `candidates` (given as id and name): `*` selects all; else an exact id
    /// selects that peer; else the peers with that exact name; else the peers whose id starts with `target`
    /// (case-insensitive). An empty result means nothing matches.
    public static func select<Candidate>(
        _ target: String, among candidates: [Candidate], id: (Candidate) -> String, name: (Candidate) -> String
    ) -> [Candidate] {
        if target == RoutedType.everyPeer { return candidates }
        let lowered = target.lowercased()
        if let exact = candidates.first(where: { id($0) == lowered }) { return [exact] }
        let named = candidates.filter { name($0) == target }
        if !named.isEmpty { return named }
        guard !target.isEmpty else { return [] }
        return candidates.filter { id($0).hasPrefix(lowered) }
    }

    /// Whether `target` selects this one peer on its own (a name, an id or an id prefix; not `*`).
    public static func matches(_ target: String, id: String, name: String) -> Bool {
        name == target || (!target.isEmpty && id.hasPrefix(target.lowercased()))
    }
}

/// The peer a command waits for (the peer gate): one chosen by name or id prefix, or else one whose hello says it
/// accepts the message type about to be sent — so that another parleyd, or an app with other handlers, on the same
/// LAN is not picked by accident. A peer that lists no types at all may accept anything and matches.
public struct WantedPeer: Codable, Sendable, Hashable, CustomStringConvertible {
    /// A name, an id or an id prefix; nil for any peer.
    public var selector: String?
    /// The message type to be sent (full or short name, as `parleyctl send` takes it); nil when it does not matter.
    public var acceptingType: String?

    public init(selector: String?, acceptingType: String? = nil) {
        self.selector = selector
        self.acceptingType = acceptingType
    }

    public func matches(id: String, name: String, accepts: [String]) -> Bool {
        if let selector { return PeerSelector.matches(selector, id: id, name: name) }
        guard let acceptingType, !accepts.isEmpty else { return true }
        return accepts.contains(acceptingType) || accepts.contains { $0.hasSuffix("." + acceptingType) }
    }

    /// Several peers accept the type and none was named: the choice is the user's. Nil when there is no choice
    /// to make (a peer was named, no type was given, or only one candidate is connected). Describes the candidates
    /// as `name (id prefix)`.
    public func ambiguity<Candidate>(
        among candidates: [Candidate], id: (Candidate) -> String, name: (Candidate) -> String, accepts: (Candidate) -> [String]
    ) -> String? {
        guard selector == nil, let acceptingType else { return nil }
        let matching = candidates.filter { matches(id: id($0), name: name($0), accepts: accepts($0)) }
        guard matching.count > 1 else { return nil }
        let listed = matching.map { "\(name($0)) (\(id($0).prefix(8)))" }.joined(separator: ", ")
        return "\(matching.count) peers accept \(acceptingType): \(listed); choose one with --to NAME|ID"
    }

    public var description: String {
        if let selector { return "Parley peer named \"\(selector)\" or with an id starting \"\(selector)\"" }
        if let acceptingType { return "Parley peer accepting \(acceptingType)" }
        return "Parley peer"
    }
}
