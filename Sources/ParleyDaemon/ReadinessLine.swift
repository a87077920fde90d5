import Foundation
import ParleyJSON

/// The line parleyd writes to standard output once it is ready, for scripts and test harnesses: one JSON object,
/// its keys always in this order, then a newline (docs/operations.md, "Readiness"). The log's `parleyd ready` line
/// says the same for people; this one is the contract for programs, so that none of them parses the log.
struct ReadinessLine: Sendable, Equatable {
    var pid: Int32
    var port: Int
    var peerID: String?
    var name: String
    var controlSocket: String
    /// The web debugger's address without its token; nil when the web debugger is off.
    var web: String?
    /// The OTLP/HTTP receiver's endpoint (`http://127.0.0.1:4318`); nil when it is off or its port was taken.
    var otlp: String?
    var dataDirectory: String
    var discovery: String

    var text: String {
        let fields: [(String, String)] = [
            ("parleyd", Self.quoted("ready")),
            ("pid", "\(pid)"),
            ("port", "\(port)"),
            ("peerId", peerID.map(Self.quoted) ?? "null"),
            ("name", Self.quoted(name)),
            ("controlSocket", Self.quoted(controlSocket)),
            ("web", web.map(Self.quoted) ?? "null"),
            ("otlp", otlp.map(Self.quoted) ?? "null"),
            ("dataDirectory", Self.quoted(dataDirectory)),
            ("discovery", Self.quoted(discovery)),
        ]
        return "{" + fields.map { "\(Self.quoted($0.0)):\($0.1)" }.joined(separator: ",") + "}"
    }

    /// A key order of our own needs the object built by hand.
    private static func quoted(_ value: String) -> String { ReadableJSON.quoted(value) }

    /// Writes the line and its newline to standard output in one `write(2)`: unbuffered, so a reader sees it at once.
    func write() {
        let bytes = Array((text + "\n").utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { Foundation.write(STDOUT_FILENO, $0.baseAddress! + offset, $0.count - offset) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { return }
            offset += written
        }
    }
}
