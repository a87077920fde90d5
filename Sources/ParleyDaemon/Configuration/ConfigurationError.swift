import Parley
import ParleyControl

/// Why parleyd's configuration cannot be used. parleyd exits with status 2 on any of these.
public enum ConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A key parleyd does not know, in the config file or as a `PARLEY_…` environment variable.
    case unknownKey(String, source: ConfigurationSource)
    /// A known key with a value outside what it allows.
    case invalidValue(key: ConfigurationKey, value: String, source: ConfigurationSource)
    /// The config file cannot be read or is not a JSON object.
    case unreadableFile(path: String, reason: String)
    /// A command-line usage error (unknown flag, missing value).
    case usage(String)
    /// `secretFile` or `webTokenFile` (`key`) names a file that cannot be used as a secret (missing, readable by
    /// others, a pattern, ...).
    case unusableSecret(key: ConfigurationKey, source: ConfigurationSource, SharedSecretError)
    /// Keys that are each valid but do not work together.
    case conflict(String)

    public var description: String {
        switch self {
        case .unknownKey(let key, let source):
            if case .environment = source {
                let known = ConfigurationKey.allCases.map(\.environmentVariable) + [ConfigurationLoader.configVariable]
                return "unknown environment variable \(key); known: \(known.joined(separator: ", "))"
            }
            if let renamed = ConfigurationKey.renamed[key] {
                return "key \"\(key)\" in \(source) was renamed \"\(renamed)\"; use the new name"
            }
            let known = ConfigurationKey.allCases.map(\.rawValue)
            return "unknown key \"\(key)\" in \(source); known keys: \(known.joined(separator: ", "))"
        case .invalidValue(let key, let value, let source):
            return "bad value for \(key): \(value) (from \(source)); allowed: \(key.allowed)"
        case .unreadableFile(let path, let reason):
            return "config file \(path): \(reason)"
        case .usage(let message):
            return message
        case .unusableSecret(let key, let source, let error):
            return "bad value for \(key) (from \(source)): \(error.descriptionNamingCommand)"
        case .conflict(let problem):
            return problem
        }
    }
}

/// Where a configuration value came from; the layers, lowest first.
public enum ConfigurationSource: Sendable, Hashable, CustomStringConvertible {
    case defaults
    case file(String)
    case environment(String)
    case commandLine(String)

    public var description: String {
        switch self {
        case .defaults: "the defaults"
        case .file(let path): "config file \(path)"
        case .environment(let variable): "environment variable \(variable)"
        case .commandLine(let flag): "command-line flag \(flag)"
        }
    }

    /// A short form for log metadata.
    public var shortName: String {
        switch self {
        case .defaults: "default"
        case .file: "file"
        case .environment: "env"
        case .commandLine: "flag"
        }
    }
}
