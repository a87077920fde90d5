import Foundation

/// The JSON Parley writes for people and their tools (the web API, `parleyctl --json`, parleyd's readiness line):
/// keys sorted, so output is stable for diffs and tests; `/` not escaped; times as ``Timestamp``'s one text form.
public enum ReadableJSON {
    /// One encoder for all of it: a `JSONEncoder` is Sendable, and each call encodes in state of its own.
    public static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(Timestamp(date).iso8601)
        }
        return encoder
    }()

    /// `text` as a JSON string, for an object built by hand where the keys' order is part of the contract.
    public static func quoted(_ text: String) -> String {
        // Encoding a String cannot fail.
        String(decoding: (try? encoder.encode(text)) ?? Data("\"\"".utf8), as: UTF8.self)
    }
}
