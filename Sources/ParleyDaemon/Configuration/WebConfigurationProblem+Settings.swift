import ParleyWeb

extension WebConfigurationProblem {
    /// The description, and where one of parleyd's settings is the way out, that setting and the command that makes
    /// its file: for parleyd's message (the web module's own text names neither).
    var descriptionNamingSettings: String {
        switch self {
        case .openBeyondLoopback: "\(description) (webTokenFile; parleyctl secret generate --output FILE makes one)"
        case .notAPort: description
        }
    }
}

extension WebConfiguration {
    /// How the web debugger's refusals tell the person in the browser where parleyd's sign-in URL comes from.
    static let parleydSignInURLHint = "the URL that parleyctl web prints"
}
