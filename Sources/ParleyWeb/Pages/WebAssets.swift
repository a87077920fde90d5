import Crypto
import Foundation
import Hummingbird
import NIOCore
import ParleyBlocking

/// One page file: its bytes, type and entity tag (a hash of the bytes).
public struct WebAsset: Sendable {
    public var contentType: String
    public var etag: String
    public var body: ByteBuffer

    init(name: String, bytes: some Collection<UInt8>, etagPrefix: String = "") {
        guard let type = WebAssets.contentType(of: name) else {
            preconditionFailure("\(name): no content type for its extension; add one to WebAssets.contentTypes")
        }
        contentType = type
        let digest = SHA256.hash(data: Array(bytes)).prefix(8).map { String($0, radix: 16).leftPadded(to: 2) }.joined()
        etag = "\"\(etagPrefix)\(digest)\""
        body = ByteBuffer(bytes: bytes)
    }
}

/// The page files the web debugger serves: the copies built into parleyd (SwiftPM embeds every file of
/// Sources/ParleyWeb/Assets in the code as `PackageResources`), or, for someone working on the pages, the files of
/// a folder read afresh on each request (`webAssetsDirectory`).
public struct WebAssets: Sendable {
    private let directory: String?

    public init(directory: String? = nil) {
        self.directory = directory
    }

    /// The built-in files, by name. SwiftPM names each after its file and lists them nowhere, so they are listed
    /// here; a test fails while a file of the folder is missing.
    public static let builtIn: [String: WebAsset] = Dictionary(
        uniqueKeysWithValues: [
            ("api.js", PackageResources.api_js), ("app.css", PackageResources.app_css), ("clipboard.js", PackageResources.clipboard_js),
            ("detail.js", PackageResources.detail_js), ("diffview.js", PackageResources.diffview_js), ("dom.js", PackageResources.dom_js),
            ("drawer.js", PackageResources.drawer_js), ("entry.js", PackageResources.entry_js), ("favicon.svg", PackageResources.favicon_svg),
            ("format.js", PackageResources.format_js), ("index.html", PackageResources.index_html), ("items.js", PackageResources.items_js),
            ("json.js", PackageResources.json_js), ("live.js", PackageResources.live_js), ("main.js", PackageResources.main_js),
            ("notify.js", PackageResources.notify_js), ("peers.js", PackageResources.peers_js), ("router.js", PackageResources.router_js),
            ("routes.js", PackageResources.routes_js), ("search.js", PackageResources.search_js), ("session.js", PackageResources.session_js),
            ("sessions.js", PackageResources.sessions_js), ("telemetry.js", PackageResources.telemetry_js),
            ("timeline.js", PackageResources.timeline_js), ("traces.js", PackageResources.traces_js), ("tree.js", PackageResources.tree_js),
            ("waterfall.js", PackageResources.waterfall_js),
        ].map { name, bytes in (name, WebAsset(name: name, bytes: bytes)) }
    )

    /// The type each kind of page file is served with, by extension.
    static let contentTypes = [
        "html": "text/html; charset=utf-8", "js": "text/javascript; charset=utf-8", "css": "text/css; charset=utf-8",
        "svg": "image/svg+xml", "png": "image/png", "json": "application/json", "txt": "text/plain; charset=utf-8",
    ]

    static func contentType(of name: String) -> String? {
        contentTypes[(name as NSString).pathExtension]
    }

    func asset(named name: String) async throws -> WebAsset? {
        guard let directory else { return Self.builtIn[name] }
        // Plain names only: nothing outside the folder.
        guard !name.contains("/"), !name.hasPrefix("."), Self.contentType(of: name) != nil else { return nil }
        let path = directory + "/" + name
        guard let bytes = try await BlockingPool.shared.run({ FileManager.default.contents(atPath: path) }) else { return nil }
        return WebAsset(name: name, bytes: bytes, etagPrefix: "dev-")
    }

    /// The app's page for every view URL (the page routes on the client, from the same list); files under
    /// `/assets/`.
    func register<Context: RequestContext>(on router: Router<Context>) {
        for view in WebPageManifest.builtIn.views {
            router.get(RouterPath(view.path)) { request, _ in try await serve("index.html", request: request) }
        }
        router.get("/assets/:name") { request, context in
            try await serve(context.parameters.get("name") ?? "", request: request)
        }
    }

    private func serve(_ name: String, request: Request) async throws -> Response {
        guard name != "index.html" || request.uri.path != "/assets/index.html", let asset = try await asset(named: name) else {
            throw WebProblem.notFound("there is no file \(request.uri.path)")
        }
        var headers = HTTPFields()
        headers[.contentType] = asset.contentType
        // Always revalidated, cheaply: a new parleyd brings new pages, and the browser must not keep the old ones.
        headers[.cacheControl] = "no-cache"
        headers[.eTag] = asset.etag
        if request.headers[.ifNoneMatch] == asset.etag {
            return Response(status: .notModified, headers: headers)
        }
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: asset.body))
    }
}
