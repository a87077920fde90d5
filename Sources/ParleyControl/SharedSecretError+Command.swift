import Parley

extension SharedSecretError {
    /// The description, and for a secret file that is missing or malformed, the command that writes one: for
    /// parleyd's and parleyctl's messages (the library's own text names no command).
    public var descriptionNamingCommand: String {
        switch self {
        case .missing(let path): "\(description); create one with `parleyctl secret generate --output \(path)`"
        case .malformed: "\(description), as `parleyctl secret generate` writes"
        case .pattern(let path, _): "\(description); make a secret with `parleyctl secret generate --output \(path) --force`"
        default: description
        }
    }
}
