import ParleyCommandLine

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

    /// Peers are connected and none is the one wanted: what to say at once rather than wait for another to come.
    /// Nil when there is nothing connected, or one of them matches. Names the closest names or accepted types.
    public func mismatch<Candidate>(
        among candidates: [Candidate], id: (Candidate) -> String, name: (Candidate) -> String, accepts: (Candidate) -> [String]
    ) -> String? {
        guard !candidates.isEmpty, !candidates.contains(where: { matches(id: id($0), name: name($0), accepts: accepts($0)) }) else {
            return nil
        }
        let connected = candidates.map { "\(name($0)) (\(id($0).prefix(8)))" }.joined(separator: ", ")
        if let selector {
            let near = NearestName.suggestions(for: selector, among: candidates.map(name))
            let hint = near.isEmpty ? "" : " (did you mean \(near.joined(separator: " or "))?)"
            return "no connected peer is named \"\(selector)\" or has an id starting \"\(selector)\"\(hint); connected: \(connected)"
        }
        guard let acceptingType else { return nil }
        // The user may type a short name (AddItemCommand) for a qualified one (listr.AddItemCommand): compare the
        // form typed.
        let qualified = acceptingType.contains(".")
        var owners: [String: [String]] = [:]
        for candidate in candidates {
            for type in accepts(candidate) {
                let shown = qualified ? type : String(type.split(separator: ".").last ?? Substring(type))
                owners[shown, default: []].append(name(candidate))
            }
        }
        let near = NearestName.suggestions(for: acceptingType, among: Array(owners.keys))
        let hint = near.isEmpty
            ? ""
            : " (did you mean " + near.map { "\($0), accepted by \(owners[$0]!.joined(separator: " and "))" }.joined(separator: ", or ") + "?)"
        return "no connected peer accepts \(acceptingType)\(hint); connected: \(connected)"
    }

    public var description: String {
        if let selector { return "Parley peer named \"\(selector)\" or with an id starting \"\(selector)\"" }
        if let acceptingType { return "Parley peer accepting \(acceptingType)" }
        return "Parley peer"
    }
}
