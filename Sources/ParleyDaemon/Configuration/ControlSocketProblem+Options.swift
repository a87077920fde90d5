import Parley

extension ControlSocketProblem {
    /// The description, and where one of parleyd's settings is the way out, that setting: for parleyd's message (the
    /// library's own text names no program's options).
    var descriptionNamingOptions: String {
        switch self {
        case .directoryIsSymlink, .notADirectory, .directoryWritableByOthers: "\(description) (--control-socket)"
        case .directoryOwnedByOther: "\(description) (--control-socket, or XDG_RUNTIME_DIR for the default path)"
        case .inUse: "\(description) (--control-socket) and a data directory of its own (--data-directory)"
        case .cannotPrepare: description
        }
    }
}
