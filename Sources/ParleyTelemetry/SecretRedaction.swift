/// Hides the values of metadata and attributes whose keys look like secrets, before they leave the app.
///
/// A key looks like a secret when, lower-cased, it contains one of ``words`` (`authorization`, `cookie`,
/// `password`, `token`, `secret` by default): `Authorization`, `http.request.header.cookie`, `api_token` and
/// `client_secret` all do. Its value, whatever its type, becomes ``replacement``; maps are searched inside too.
public struct SecretRedaction: Sendable, Hashable {
    public static let defaultWords = ["authorization", "cookie", "password", "token", "secret"]
    public static let replacement = TelemetryValue.string("[redacted]")

    /// Lower-case fragments; a key containing any of them is redacted.
    public var words: [String]

    public init(words: [String] = SecretRedaction.defaultWords) {
        self.words = words.map { $0.lowercased() }.filter { !$0.isEmpty }
    }

    /// Redacts nothing.
    public static let none = SecretRedaction(words: [])

    public func isSecret(_ key: String) -> Bool {
        guard !words.isEmpty else { return false }
        let lowered = key.lowercased()
        return words.contains { lowered.contains($0) }
    }

    /// `attributes` with every secret-looking key's value replaced.
    public func apply(to attributes: TelemetryAttributes) -> TelemetryAttributes {
        guard !words.isEmpty else { return attributes }
        var result = attributes
        for (key, value) in attributes {
            if isSecret(key) {
                result[key] = Self.replacement
            } else if let redacted = apply(to: value) {
                result[key] = redacted
            }
        }
        return result
    }

    /// The value with secrets inside its maps redacted, or nil when it holds none.
    private func apply(to value: TelemetryValue) -> TelemetryValue? {
        switch value {
        case .map(let items):
            let redacted = apply(to: items)
            return redacted == items ? nil : .map(redacted)
        case .array(let items):
            let redacted = items.map { apply(to: $0) ?? $0 }
            return redacted == items ? nil : .array(redacted)
        default:
            return nil
        }
    }
}
