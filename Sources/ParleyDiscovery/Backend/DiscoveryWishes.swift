/// What a backend has been asked to do and keeps doing: the advertisement (with its subtypes in full form) and the
/// scopes to browse. Kept before the backend starts, and again whenever its daemon comes back.
package struct DiscoveryWishes: Sendable {
    package private(set) var advertisement: Advertisement?
    /// The advertisement's subtypes in full form (`_relay._sub._debug._tcp`), as `Advertisement.validated()` gives.
    package private(set) var subtypes: [String] = []
    package private(set) var browsed: [BrowseScope] = []

    package init() {}

    package var isEmpty: Bool { advertisement == nil && browsed.isEmpty }

    package mutating func advertise(_ advertisement: Advertisement, subtypes: [String]) {
        self.advertisement = advertisement
        self.subtypes = subtypes
    }

    package mutating func withdraw() {
        advertisement = nil
        subtypes = []
    }

    /// Adds `scope`; false if it was already browsed.
    @discardableResult
    package mutating func browse(_ scope: BrowseScope) -> Bool {
        guard !browsed.contains(scope) else { return false }
        browsed.append(scope)
        return true
    }

    package mutating func stopBrowsing(_ scope: BrowseScope) {
        browsed.removeAll { $0 == scope }
    }
}
