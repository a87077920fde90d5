import Foundation

/// The page's views and the live stream's event names, as Assets/routes.js lists them: the page imports that
/// module, and parleyd reads the same list from its built-in copy to serve the page at each view's path and to
/// name the events it sends. One list, so the server and the page cannot disagree on either.
struct WebPageManifest: Decodable, Sendable {
    struct View: Decodable, Sendable {
        var name: String
        /// `/sessions/:id`: Hummingbird's path syntax, which the page's router reads too.
        var path: String
    }

    var views: [View]
    var liveEvents: [WebEvent.Name]

    /// What Assets/routes.js holds from the line that starts `export default` to its last `}`.
    init(module: some Collection<UInt8>) throws {
        let text = String(decoding: module, as: UTF8.self)
        guard let start = text.range(of: "\nexport default ")?.upperBound, let end = text.lastIndex(of: "}"), start < end else {
            throw ManifestError(reason: "routes.js does not hold `export default {…}`")
        }
        self = try JSONDecoder().decode(Self.self, from: Data(text[start...end].utf8))
        let missing = WebEvent.Name.allCases.filter { !liveEvents.contains($0) }
        guard missing.isEmpty else {
            throw ManifestError(reason: "routes.js does not list the live events \(missing.map(\.rawValue)), which parleyd sends")
        }
    }

    struct ManifestError: Error, CustomStringConvertible {
        var reason: String
        var description: String { "Sources/ParleyWeb/Assets/routes.js: \(reason)" }
    }

    /// Read once, from the copy built into parleyd. A test reads it too: a routes.js that cannot be read fails the
    /// build's tests rather than a running parleyd.
    static let builtIn: WebPageManifest = {
        do {
            return try WebPageManifest(module: PackageResources.routes_js)
        } catch {
            preconditionFailure("\(error)")
        }
    }()
}
