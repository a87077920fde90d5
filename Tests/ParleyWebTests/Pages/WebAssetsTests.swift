import Foundation
import HummingbirdTesting
import NIOFoundationCompat
import Testing

@testable import ParleyWeb

@Suite("Pages")
struct WebAssetsTests {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Sources/ParleyWeb/Assets")

    @Test("every file of Sources/ParleyWeb/Assets is built in, byte for byte, with a content type (a new file goes into WebAssets.builtIn)")
    func builtInAreTheFolder() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.folder.path).filter { !$0.hasPrefix(".") }
        #expect(Set(names) == Set(WebAssets.builtIn.keys))
        for name in names {
            let bytes = try Data(contentsOf: Self.folder.appendingPathComponent(name))
            #expect(WebAssets.builtIn[name].map { Data(buffer: $0.body) } == bytes, "\(name)")
            #expect(WebAssets.contentType(of: name) != nil, "\(name)")
        }
    }

    @Test("routes.js lists the views parleyd serves the page at and every live event it sends")
    func manifest() throws {
        let manifest = WebPageManifest.builtIn
        #expect(
            manifest.views.map(\.path) == [
                "/", "/peers", "/drawers", "/traces", "/traces/:trace", "/sessions/:id", "/sessions/:id/entries/:seq", "/sessions/:id/logs/:log",
                "/sessions/:id/spans/:span",
            ])
        #expect(Set(manifest.liveEvents) == Set(WebEvent.Name.allCases))
        #expect(throws: WebPageManifest.ManifestError.self) {
            _ = try WebPageManifest(module: Array("// routes\nexport default {\"views\": [], \"liveEvents\": [\"entry\"]};\n".utf8))
        }
    }

    @Test("the page for every view URL, without a session cookie (only the sign-in link gives one); a tag answered 304; files by type; /assets/index.html and unknown files are 404s")
    func pages() async throws {
        let web = WebTestServer()
        try await web.test { client in
            for path in [
                "/", "/peers", "/drawers", "/sessions/1", "/sessions/1/entries/10?diff=9", "/sessions/1/logs/2?level=warning", "/sessions/1/spans/1",
                "/traces?session=1", "/traces/4bf92f3577b34da6a3ce929d0e0e4736?span=1",
            ] {
                try await client.execute(uri: path, method: .get) { response throws in
                    #expect(response.status == .ok, "\(path)")
                    #expect(response.headers[.contentType] == "text/html; charset=utf-8")
                    #expect(response.headers[.setCookie] == nil)
                }
            }
            try await client.execute(uri: "/sessions/1?token=\(web.server.configuration.signInToken)", method: .get) { response throws in
                #expect(response.status == .seeOther && response.headers[.location] == "/sessions/1")
                #expect(response.headers[.setCookie]?.contains("HttpOnly") == true)
                #expect(response.headers[.setCookie]?.contains("SameSite=Strict") == true)
            }
            let etag = try await client.execute(uri: "/", method: .get) { try #require($0.headers[.eTag]) }
            try await client.execute(uri: "/", method: .get, headers: [.ifNoneMatch: etag]) { #expect($0.status == .notModified) }
            for (path, type) in [
                ("/assets/main.js", "text/javascript; charset=utf-8"), ("/assets/app.css", "text/css; charset=utf-8"),
                ("/assets/favicon.svg", "image/svg+xml"),
            ] {
                try await client.execute(uri: path, method: .get) { response throws in
                    #expect(response.headers[.contentType] == type, "\(path)")
                    #expect(response.headers[.cacheControl] == "no-cache", "\(path)")
                }
            }
            try await client.execute(uri: "/assets/index.html", method: .get) { #expect($0.status == .notFound) }
            try await client.execute(uri: "/assets/nothing.js", method: .get) { #expect($0.status == .notFound) }
        }
    }
}
