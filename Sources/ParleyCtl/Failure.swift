import Parley

/// parleyctl's exit statuses, as listed in `parleyctl --help` and docs/cli.md.
enum ExitStatus: Int32, Sendable {
    case success = 0
    case error = 1
    case usage = 2
    case noPeer = 3
    case noReply = 4
    case daemonUnreachable = 5

    init(for error: TransceiverError) {
        switch error {
        case .noPeer: self = .noPeer
        case .replyTimedOut: self = .noReply
        default: self = .error
        }
    }
}

/// A failure with a message for the user and the exit status it maps to.
struct CtlFailure: Error, CustomStringConvertible {
    var status: ExitStatus
    var message: String

    init(_ status: ExitStatus, _ message: String) {
        self.status = status
        self.message = message
    }

    var description: String { message }

    static func usage(_ message: String) -> CtlFailure { CtlFailure(.usage, message) }

    /// parleyd's control socket cannot be reached (exit status 5): where, why, and what to do. `--direct` is
    /// offered only by the commands that have it.
    static func daemonUnreachable(_ path: String, reason: String, offersDirect: Bool) -> CtlFailure {
        CtlFailure(
            .daemonUnreachable,
            "parleyd is not reachable at \(path) (\(reason)). Start it (`parleyd`, or `systemctl start parleyd`), "
                + (offersDirect
                    ? "point to its socket with --socket PATH, or use --direct to talk to the LAN without parleyd."
                    : "or point to its socket with --socket PATH.")
        )
    }
}
