import Foundation

/// A header parleyd sends with each export it forwards (`otlpForwardHeaders`): a receiver's token, a tenant id.
public struct OTLPForwardHeader: Sendable, Hashable {
    public var name: String
    public var value: String

    /// Why a header cannot be sent. Never quotes a value: values are credentials more often than not.
    public enum Problem: Error, Sendable, Hashable, CustomStringConvertible {
        case invalidName(String)
        case invalidValue(name: String)
        case notPercentEncoded(name: String)
        case missingValue(name: String)
        case notText(String)
        case setByParleyd(String)

        public var description: String {
            switch self {
            case .invalidName(let name):
                "\"\(name)\" is not a header name (letters, digits and !#$%&'*+-.^_`|~ only)"
            case .invalidValue(let name):
                "the value of \(name) holds a line break or a control character"
            case .notPercentEncoded(let name):
                "the value of \(name) has a % that does not start an escape (%20); write a literal % as %25"
            case .missingValue(let name):
                "\(name) has no =value"
            case .notText(let name):
                "the value of \(name) is not a string"
            case .setByParleyd(let name):
                "\(name) is set by parleyd for each export"
            }
        }
    }

    /// Headers parleyd writes itself: a configured one would contradict them.
    static let setByParleyd: Set<String> = ["content-type", "content-length", "content-encoding", "host", "transfer-encoding", "connection"]

    public init(name: String, value: String) throws(Problem) {
        let trimmed = name.trimmingCharacters(in: .whitespaces)
        let tokenCharacters = Set("!#$%&'*+-.^_`|~".unicodeScalars)
        guard !trimmed.isEmpty,
            trimmed.unicodeScalars.allSatisfy({ $0.isASCII && (CharacterSet.alphanumerics.contains($0) || tokenCharacters.contains($0)) })
        else { throw .invalidName(trimmed) }
        guard !Self.setByParleyd.contains(trimmed.lowercased()) else { throw .setByParleyd(trimmed) }
        guard !value.unicodeScalars.contains(where: { $0.value < 0x20 && $0 != "\t" || $0.value == 0x7F }) else {
            throw .invalidValue(name: trimmed)
        }
        self.name = trimmed
        self.value = value.trimmingCharacters(in: .whitespaces)
    }

    /// `OTEL_EXPORTER_OTLP_HEADERS`'s format (the W3C baggage list OpenTelemetry's SDKs read): `name=value` pairs
    /// separated by commas, spaces around them ignored, each value percent-decoded (`Bearer%20TOKEN`).
    public static func parse(_ text: String) throws(Problem) -> [OTLPForwardHeader] {
        var headers: [OTLPForwardHeader] = []
        for pair in text.split(separator: ",") {
            let item = pair.trimmingCharacters(in: .whitespaces)
            if item.isEmpty { continue }
            guard let equals = item.firstIndex(of: "=") else { throw .missingValue(name: item) }
            let name = String(item[..<equals]).trimmingCharacters(in: .whitespaces)
            let encoded = String(item[item.index(after: equals)...])
            guard let value = encoded.removingPercentEncoding else { throw .notPercentEncoded(name: name) }
            headers.append(try OTLPForwardHeader(name: name, value: value))
        }
        return headers
    }

    /// An `http` or `https` URL with a host, and no query or fragment (the signal's path is added to it), or nil.
    static func receiverURL(_ text: String) -> URL? {
        guard let url = URL(string: text.trimmingCharacters(in: .whitespaces)), let scheme = url.scheme?.lowercased(),
            scheme == "http" || scheme == "https", let host = url.host, !host.isEmpty, url.query == nil, url.fragment == nil,
            url.user == nil
        else { return nil }
        return url
    }

    /// Whether `host` (a URL's) names the host parleyd's receiver listens on at `listenHost`.
    static func isThisHost(_ host: String, listeningOn listenHost: String) -> Bool {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        let loopback = bare == "localhost" || bare == "::1" || bare.hasPrefix("127.")
        let wildcard = listenHost == "0.0.0.0" || listenHost == "::"
        return bare == listenHost || (loopback && (wildcard || listenHost == "::1" || listenHost.hasPrefix("127.")))
    }
}
