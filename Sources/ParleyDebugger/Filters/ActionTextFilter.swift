import ParleyJSON

/// Which actions to show, decided on the action's text: the daemon and CLI side of the article's `ActionFilter`
/// (apps filter typed actions with `ActionFilter<Action>` instead).
///
/// Filters compose, and can be saved by name in parleyd's configuration so that the next person debugging the app
/// finds them ready. The JSON spelling, as written in the configuration file:
///
/// ```json
/// "actionFilters": {
///   "noisy":   {"anyOf": ["hover*", "window.visibility*"]},
///   "quiet":   {"allExcept": [{"filter": "noisy"}, "*.tick"]},
///   "sidebar": "sidebar.*",
///   "nothing": {"not": {"all": true}}
/// }
/// ```
///
/// | JSON | case | includes an action when |
/// |---|---|---|
/// | `"hover*"` | ``pattern(_:)`` | the ``ActionGlob`` matches the whole text |
/// | `{"all": true}` | ``all`` | always |
/// | `{"not": F}` | ``not(_:)`` | F excludes it |
/// | `{"anyOf": [F, …]}` | ``anyOf(_:)`` | at least one F includes it (none: never) |
/// | `{"allExcept": [F, …]}` | ``allExcept(_:)`` | no F includes it (none: always) |
/// | `{"filter": "noisy"}` | ``named(_:)`` | the filter saved under that name does |
///
/// Names are resolved against a dictionary of saved filters (``resolved(in:)``, ``Matcher``); an unknown name or
/// a cycle of names is an ``ActionFilterError``, and ``validate(_:)`` checks a whole dictionary at once, as the
/// configuration loader does.
public indirect enum ActionTextFilter: Sendable, Hashable, Codable, CustomStringConvertible {
    case pattern(String)
    case all
    case not(ActionTextFilter)
    case anyOf([ActionTextFilter])
    case allExcept([ActionTextFilter])
    case named(String)

    /// The same filter with every ``named(_:)`` replaced by what it names, and every pattern checked.
    public func resolved(in named: [String: ActionTextFilter]) throws(ActionFilterError) -> ActionTextFilter {
        var resolver = Resolver(named: named)
        return try resolver.resolve(self, referencedBy: nil)
    }

    /// Whether this filter includes `action`; resolves names each time (use a ``Matcher`` for many actions).
    public func includes(_ action: String, named: [String: ActionTextFilter] = [:]) throws(ActionFilterError) -> Bool {
        try Matcher(self, named: named).includes(action)
    }

    /// Checks saved filters: every name they use exists, no name leads back to itself, every pattern is valid.
    public static func validate(_ named: [String: ActionTextFilter]) throws(ActionFilterError) {
        var resolver = Resolver(named: named)
        for name in named.keys.sorted() {
            guard !name.isEmpty else { throw .emptyName }
            _ = try resolver.resolve(.named(name), referencedBy: nil)
        }
    }

    /// The JSON spelling, compact.
    public var description: String {
        switch self {
        case .pattern(let pattern): return quoted(pattern)
        case .all: return #"{"all":true}"#
        case .not(let filter): return #"{"not":"# + filter.description + "}"
        case .anyOf(let filters): return #"{"anyOf":["# + filters.map(\.description).joined(separator: ",") + "]}"
        case .allExcept(let filters): return #"{"allExcept":["# + filters.map(\.description).joined(separator: ",") + "]}"
        case .named(let name): return #"{"filter":"# + quoted(name) + "}"
        }
    }

    private func quoted(_ text: String) -> String {
        var output = ""
        JSONValue.writeQuoted(text, to: &output)
        return output
    }

    /// A filter resolved once, ready to test many actions.
    public struct Matcher: Sendable {
        private indirect enum Node: Sendable {
            case glob(ActionGlob)
            case all
            case not(Node)
            case anyOf([Node])
            case allExcept([Node])
        }

        private let root: Node
        /// The filter with its names resolved.
        public let filter: ActionTextFilter

        public init(_ filter: ActionTextFilter, named: [String: ActionTextFilter] = [:]) throws(ActionFilterError) {
            self.filter = try filter.resolved(in: named)
            self.root = try Self.compile(self.filter)
        }

        public func includes(_ action: String) -> Bool {
            Self.evaluate(root, action)
        }

        private static func compile(_ filter: ActionTextFilter) throws(ActionFilterError) -> Node {
            switch filter {
            case .pattern(let pattern): return .glob(try ActionGlob(pattern))
            case .all: return .all
            case .not(let inner): return .not(try compile(inner))
            case .anyOf(let filters):
                var nodes: [Node] = []
                for inner in filters { nodes.append(try compile(inner)) }
                return .anyOf(nodes)
            case .allExcept(let filters):
                var nodes: [Node] = []
                for inner in filters { nodes.append(try compile(inner)) }
                return .allExcept(nodes)
            case .named(let name):
                // `resolved(in:)` has replaced every name.
                throw .unknownFilter(name, referencedBy: nil)
            }
        }

        private static func evaluate(_ node: Node, _ action: String) -> Bool {
            switch node {
            case .glob(let glob): glob.matches(action)
            case .all: true
            case .not(let inner): !evaluate(inner, action)
            case .anyOf(let nodes): nodes.contains { evaluate($0, action) }
            case .allExcept(let nodes): !nodes.contains { evaluate($0, action) }
            }
        }
    }
}

/// Replaces names by the filters they name, each name once, watching for cycles.
private struct Resolver {
    let named: [String: ActionTextFilter]
    var done: [String: ActionTextFilter] = [:]
    var inProgress: [String] = []

    mutating func resolve(_ filter: ActionTextFilter, referencedBy: String?) throws(ActionFilterError) -> ActionTextFilter {
        switch filter {
        case .pattern(let pattern):
            _ = try ActionGlob(pattern)
            return filter
        case .all:
            return filter
        case .not(let inner):
            return .not(try resolve(inner, referencedBy: referencedBy))
        case .anyOf(let filters):
            var resolved: [ActionTextFilter] = []
            for inner in filters { resolved.append(try resolve(inner, referencedBy: referencedBy)) }
            return .anyOf(resolved)
        case .allExcept(let filters):
            var resolved: [ActionTextFilter] = []
            for inner in filters { resolved.append(try resolve(inner, referencedBy: referencedBy)) }
            return .allExcept(resolved)
        case .named(let name):
            if let known = done[name] { return known }
            if let start = inProgress.firstIndex(of: name) { throw .cycle(Array(inProgress[start...]) + [name]) }
            guard let definition = named[name] else { throw .unknownFilter(name, referencedBy: referencedBy) }
            inProgress.append(name)
            let resolved = try resolve(definition, referencedBy: name)
            inProgress.removeLast()
            done[name] = resolved
            return resolved
        }
    }
}

/// Why an action filter cannot be used.
public enum ActionFilterError: Error, Sendable, Hashable, CustomStringConvertible {
    /// `{"filter": name}` names no saved filter; `referencedBy` is the saved filter that uses it (nil: the
    /// filter given directly).
    case unknownFilter(String, referencedBy: String?)
    /// Saved filters that refer to each other in a loop, as the names are followed: `["a", "b", "a"]`.
    case cycle([String])
    case invalidPattern(String, reason: String)
    /// A saved filter whose name is the empty string: it could not be referred to.
    case emptyName

    public var description: String {
        switch self {
        case .unknownFilter(let name, let referencedBy):
            let user = referencedBy.map { "the saved action filter \"\($0)\" refers to" } ?? "there is"
            return "\(user) no saved action filter named \"\(name)\"; save it under actionFilters in parleyd's configuration or fix the name"
        case .cycle(let names):
            return "the saved action filters refer to each other in a loop (\(names.joined(separator: " → "))); break the loop"
        case .invalidPattern(let pattern, let reason):
            return "the action pattern \"\(pattern)\" is invalid: \(reason)"
        case .emptyName:
            return "a saved action filter has an empty name; give it a name"
        }
    }
}

extension ActionTextFilter {
    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    private static let keys = ["all", "not", "anyOf", "allExcept", "filter"]

    public init(from decoder: any Decoder) throws {
        if let single = try? decoder.singleValueContainer(), let pattern = try? single.decode(String.self) {
            self = .pattern(pattern)
            return
        }
        let container: KeyedDecodingContainer<Key>
        do {
            container = try decoder.container(keyedBy: Key.self)
        } catch {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: "an action filter is a pattern string or an object with one of \(Self.keys.joined(separator: ", "))")
            )
        }
        let found = container.allKeys.map(\.stringValue)
        guard found.count == 1, let key = container.allKeys.first, Self.keys.contains(key.stringValue) else {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: decoder.codingPath,
                    debugDescription: "an action filter object has exactly one of the keys \(Self.keys.joined(separator: ", ")); found \(found.isEmpty ? "none" : found.sorted().joined(separator: ", "))"
                )
            )
        }
        switch key.stringValue {
        case "all":
            guard try container.decode(Bool.self, forKey: key) else {
                throw DecodingError.dataCorruptedError(
                    forKey: key, in: container, debugDescription: #"{"all": false} is not a filter; write {"not": {"all": true}} to include nothing"#
                )
            }
            self = .all
        case "not": self = .not(try container.decode(ActionTextFilter.self, forKey: key))
        case "anyOf": self = .anyOf(try container.decode([ActionTextFilter].self, forKey: key))
        case "allExcept": self = .allExcept(try container.decode([ActionTextFilter].self, forKey: key))
        default: self = .named(try container.decode(String.self, forKey: key))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .pattern(let pattern):
            var container = encoder.singleValueContainer()
            try container.encode(pattern)
        case .all:
            var container = encoder.container(keyedBy: Key.self)
            try container.encode(true, forKey: Key(stringValue: "all"))
        case .not(let filter):
            var container = encoder.container(keyedBy: Key.self)
            try container.encode(filter, forKey: Key(stringValue: "not"))
        case .anyOf(let filters):
            var container = encoder.container(keyedBy: Key.self)
            try container.encode(filters, forKey: Key(stringValue: "anyOf"))
        case .allExcept(let filters):
            var container = encoder.container(keyedBy: Key.self)
            try container.encode(filters, forKey: Key(stringValue: "allExcept"))
        case .named(let name):
            var container = encoder.container(keyedBy: Key.self)
            try container.encode(name, forKey: Key(stringValue: "filter"))
        }
    }
}
