import Foundation
@testable import ParleyDaemon
import Testing

/// `otlpForward` and `otlpForwardHeaders` as parleyd loads them.
@Suite("parleyd forwarding configuration")
struct OTLPForwardConfigurationTests {
    func load(flags: [String] = [], file: String = "{}", environment: [String: String] = [:]) throws -> DaemonConfiguration {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("parleyd-forward-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let config = directory.appendingPathComponent("parleyd.json")
        try Data(file.utf8).write(to: config)
        let options = try CommandLineOptions.parse(flags + ["--config", config.path])
        return try ConfigurationLoader(options: options, environment: environment).load()
    }

    /// The error `load` throws, as parleyd prints it.
    func refusal(flags: [String] = [], file: String = "{}", environment: [String: String] = [:]) -> String? {
        do {
            _ = try load(flags: flags, file: file, environment: environment)
            return nil
        } catch {
            return "\(error)"
        }
    }

    @Test("off by default; an http or https URL, with a path, is taken; off turns it off again")
    func url() throws {
        #expect(try load().otlpForward == nil)
        #expect(try load(flags: ["--otlp-forward", "http://collector.lan:4318"]).otlpForward?.absoluteString == "http://collector.lan:4318")
        #expect(try load(environment: ["PARLEY_OTLP_FORWARD": "https://tempo.example.org/otlp"]).otlpForward?.path == "/otlp")
        #expect(try load(flags: ["--otlp-forward", "off"], file: #"{"otlpForward": "http://collector.lan:4318"}"#).otlpForward == nil)
    }

    @Test("a URL that is not http or https, has no host, or has a query is refused, naming the key and what it takes", arguments: [
        "ftp://collector.lan/", "collector.lan:4318", "http://", "http://collector.lan:4318/?tenant=1", "http://user:pw@collector.lan:4318",
    ])
    func badURL(_ text: String) {
        let error = refusal(flags: ["--otlp-forward", text])
        #expect(error?.contains("bad value for otlpForward") == true, "\(error ?? "accepted")")
        #expect(error?.contains("the http:// or https:// URL of an OTLP/HTTP receiver") == true)
    }

    @Test("a URL of parleyd's own receiver is refused: every record would come back to be sent again")
    func ownReceiver() {
        for url in ["http://127.0.0.1:4318", "http://localhost:4318/", "http://[::1]:4318"] {
            let error = refusal(flags: ["--otlp-forward", url])
            #expect(error?.contains("is parleyd's own OTLP receiver") == true, "\(url): \(error ?? "accepted")")
        }
        #expect(refusal(flags: ["--otlp-forward", "http://127.0.0.1:4318", "--otlp-listen", "127.0.0.1:4319"]) == nil)
        #expect(refusal(flags: ["--otlp-forward", "http://127.0.0.1:4318", "--otlp-listen", "off"]) == nil)
    }

    @Test("headers as OTEL_EXPORTER_OTLP_HEADERS writes them (percent-decoded, spaces ignored), or as a JSON object in the file")
    func headers() throws {
        let parsed = try load(environment: ["PARLEY_OTLP_FORWARD_HEADERS": " authorization=Bearer%20abc%3D , x-scope-orgid=tenant-1,"]).otlpForwardHeaders
        #expect(parsed == [try OTLPForwardHeader(name: "authorization", value: "Bearer abc="), try OTLPForwardHeader(name: "x-scope-orgid", value: "tenant-1")])
        let object = try load(file: #"{"otlpForwardHeaders": {"x-scope-orgid": "tenant-1", "authorization": "Bearer abc"}}"#).otlpForwardHeaders
        #expect(object.map(\.name) == ["authorization", "x-scope-orgid"])
        #expect(object.first?.value == "Bearer abc")
    }

    @Test("a header that cannot be sent is refused, naming it but never showing a value", arguments: [
        ("x y=secret1", "is not a header name"), ("authorization", "has no =value"), ("authorization=secret1%zz", "does not start an escape"),
        ("content-type=secret1", "is set by parleyd"), ("authorization=secret1%0Aevil: 1", "a line break"),
    ])
    func badHeader(_ text: String, _ problem: String) {
        let error = refusal(flags: ["--otlp-forward-headers", text])
        #expect(error?.contains("bad value for otlpForwardHeaders") == true && error?.contains(problem) == true, "\(error ?? "accepted")")
        #expect(error?.contains("secret1") == false, "the value was shown: \(error ?? "")")
    }

    @Test("the start-up line shows the headers' names and hides their values")
    func description() throws {
        let configuration = try load(flags: ["--otlp-forward", "http://collector.lan:4318", "--otlp-forward-headers", "authorization=Bearer%20abc,x-scope-orgid=t1"])
        #expect(configuration.valueDescription(.otlpForwardHeaders) == "authorization=…,x-scope-orgid=…")
        #expect(configuration.valueDescription(.otlpForward) == "http://collector.lan:4318")
        #expect(try load().valueDescription(.otlpForwardHeaders) == "none")
    }
}
