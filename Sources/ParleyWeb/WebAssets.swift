import Foundation
import Hummingbird
import NIOCore

/// One page file: its text, type and entity tag (a hash of the text).
public struct WebAsset: Sendable {
    public var contentType: String
    public var etag: String
    public var text: String
}

/// The page files the web debugger serves: the copies built into parleyd (`Assets+Embedded.swift`, written by
/// scripts/embed-web-assets from Sources/ParleyWeb/Assets), or, for someone working on the pages, the files of a
/// folder read afresh on each request (`webAssetsDirectory`).
public struct WebAssets: Sendable {
    private let directory: String?

    public init(directory: String? = nil) {
        self.directory = directory
    }

    /// The built-in files, by name (tests compare them with the folder).
    public static var builtIn: [String: WebAsset] { embedded }

    func asset(named name: String) -> WebAsset? {
        guard let directory else { return Self.embedded[name] }
        // Plain names only: nothing outside the folder.
        guard !name.contains("/"), !name.hasPrefix("."),
            let text = try? String(contentsOfFile: directory + "/" + name, encoding: .utf8),
            let type = Self.embedded[name]?.contentType ?? Self.contentType(of: name)
        else { return nil }
        return WebAsset(contentType: type, etag: "\"dev-\(text.hashValue)\"", text: text)
    }

    /// A new file's type: that of a built-in file with the same extension (scripts/embed-web-assets holds the one
    /// table of types).
    private static func contentType(of name: String) -> String? {
        let suffix = "." + (name as NSString).pathExtension
        return embedded.first { $0.key.hasSuffix(suffix) }?.value.contentType
    }

    /// The app's page for every view URL (the page routes on the client); files under `/assets/`.
    func register<Context: RequestContext>(on router: Router<Context>, sessionCookie: Cookie) {
        for path in ["/", "/peers", "/drawers", "/sessions/:id", "/sessions/:id/entries/:seq"] {
            router.get(RouterPath(path)) { request, _ in
                var response = try serve("index.html", request: request)
                // The page's own requests that change something are authorised by this cookie (WebAccess).
                response.setCookie(sessionCookie)
                return response
            }
        }
        router.get("/assets/:name") { request, context in
            try serve(context.parameters.get("name") ?? "", request: request)
        }
    }

    private func serve(_ name: String, request: Request) throws -> Response {
        guard name != "index.html" || request.uri.path != "/assets/index.html", let asset = asset(named: name) else {
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
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: asset.text)))
    }
}
