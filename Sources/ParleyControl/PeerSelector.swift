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
