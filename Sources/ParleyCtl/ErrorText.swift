import Foundation
import NIOCore
import Parley
import ParleyControl

/// An error as a person reads it: one message that says what happened (and, where the error knows, what to do),
/// and the causes behind it for `--verbose`. Library types never show: SwiftNIO's errors become what they mean.
struct ErrorText {
    var message: String
    var causes: [String] = []

    init(message: String, causes: [String] = []) {
        self.message = message
        self.causes = causes
    }

    init(_ error: any Error) {
        switch error {
        case let error as TransceiverError:
            self.init(transceiver: error)
        case let error as SharedSecretError:
            self.init(message: error.descriptionNamingCommand)
        case let error as IOError:
            self.init(message: "a system call failed: \(String(cString: strerror(error.errnoCode)))", causes: ["\(error)"])
        case let error as ChannelError:
            self.init(message: Self.channel(error), causes: ["\(error)"])
        default:
            self.init(message: "\(error)")
        }
    }

    private init(transceiver error: TransceiverError) {
        switch error {
        case .remoteError(let code, let text):
            // What the other side said is the message; that it came as an error reply, and with which code, is a cause.
            let control = ControlErrorCode(code)
            let name = control?.description ?? code.description
            // One line, whatever the peer wrote: an app's refusal with a line break must not print a line of its own.
            let said = text.escapedForPeople(maximumBytes: 4096)
            message = said.isEmpty ? "the peer refused the request (\(name))" : Self.naming(command: control, in: said)
            causes = ["the peer answered with error code \(code.rawValue) (\(name))"]
        case .connectionClosed(let peer, let reason):
            message = "the connection closed before the answer came: \(reason)"
            causes = ["peer \(peer)"]
        case .replyTimedOut(let type, let peer, let timeout):
            // `send` says which option waits longer (--reply-timeout); other requests have fixed bounds.
            message = "no reply to \(type) within \(timeout.secondsText); is the peer busy or stuck?"
            causes = ["peer \(peer)"]
        default:
            message = error.description
        }
    }

    /// parleyd's words, and where a parleyctl command or option shows what is there or does what was meant, that:
    /// parleyd's texts name none (they also reach the web debugger), so the hints are keyed by the error's code.
    private static func naming(command control: ControlErrorCode?, in text: String) -> String {
        switch control {
        case .noSuchSession?: text + " (parleyctl sessions lists them)"
        case .noSuchEntry? where text.hasSuffix(")"): String(text.dropLast()) + "; parleyctl history lists what is kept)"
        case .noSuchEntry?: text + " (parleyctl history lists what is kept)"
        case .firstOfSession?: text + "; give both entries (parleyctl diff A B)"
        case .sessionAppNotConnected?: text + "; choose one with --to or use --all"
        default: text
        }
    }

    private static func channel(_ error: ChannelError) -> String {
        switch error {
        case .ioOnClosedChannel, .alreadyClosed, .eof, .outputClosed, .inputClosed:
            "the connection closed"
        case .connectTimeout:
            "the connection attempt timed out"
        default:
            "the connection failed"
        }
    }
}
