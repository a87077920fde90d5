import Foundation
import Logging
import ParleyJSON
import Synchronization

/// The daemon's one log level, shared by every `Logger` the daemon makes, so that SIGHUP can change it for all
/// of them at once (swift-log loggers are values; a level set on one copy would not reach the others).
public final class LogLevelControl: Sendable {
    private let level: Mutex<Logger.Level>

    public init(_ level: Logger.Level) { self.level = Mutex(level) }

    public var current: Logger.Level {
        get { level.withLock { $0 } }
        set { level.withLock { $0 = newValue } }
    }
}

/// Writes one line per event to standard error. Under systemd (`JOURNAL_STREAM` set) each line starts with the
/// journald priority (`<6>` for info, as sd-daemon.h defines them) and carries no timestamp, since the journal
/// adds its own; otherwise the line starts with a timestamp and the level. Metadata is appended as sorted
/// `key=value` pairs, never interpolated into the message.
public struct DaemonLogHandler: LogHandler {
    public enum Format: Sendable, Equatable {
        case human
        case journal
    }

    public let label: String
    public let format: Format
    public let control: LogLevelControl
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?

    public init(label: String, format: Format, control: LogLevelControl, metadataProvider: Logger.MetadataProvider? = nil) {
        self.label = label
        self.format = format
        self.control = control
        self.metadataProvider = metadataProvider
    }

    /// `.journal` when standard error is connected to the journal (systemd sets `JOURNAL_STREAM`).
    public static func format(environment: [String: String]) -> Format {
        environment["JOURNAL_STREAM"].map { !$0.isEmpty } == true ? .journal : .human
    }

    /// The level is the daemon-wide one: setting it on any logger changes it for all (see ``LogLevelControl``).
    public var logLevel: Logger.Level {
        get { control.current }
        set { control.current = newValue }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { _, new in new } }
        if let own = event.metadata { merged.merge(own) { _, new in new } }
        if let error = event.error { merged["error"] = "\(error)" }
        Self.write(Self.line(level: event.level, label: label, message: event.message.description, metadata: merged, format: format))
    }

    /// One formatted line, without the newline.
    static func line(level: Logger.Level, label: String, message: String, metadata: Logger.Metadata, format: Format) -> String {
        var text: String
        switch format {
        case .journal:
            text = "<\(journalPriority(level))>\(label): \(message)"
        case .human:
            text = "\(timestamp()) \(level) \(label): \(message)"
        }
        for key in metadata.keys.sorted() {
            // Bounded: a value can be remote text (a peer's name, a reason it sent) as long as a frame.
            text += " \(key)=\(quoted(String(describing: metadata[key]!).excerpt(maximumBytes: maximumValueBytes)))"
        }
        // One event, one line: a newline (or NUL, CR, an escape sequence, U+2028…) coming from a peer's name or any
        // other remote text would otherwise forge a second journal record or drive the terminal.
        return text.needsEscapingForPeople ? text.escapedForPeople(maximumBytes: .max) : text
    }

    /// The most of one metadata value a log line shows.
    static let maximumValueBytes = 1024

    /// sd-daemon.h: SD_DEBUG 7, SD_INFO 6, SD_NOTICE 5, SD_WARNING 4, SD_ERR 3, SD_CRIT 2.
    public static func journalPriority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }

    /// Values with spaces, quotes or `=` are quoted so that `key=value` pairs stay parseable.
    static func quoted(_ value: String) -> String {
        guard value.isEmpty || value.contains(where: { $0 == " " || $0 == "\"" || $0 == "=" || $0 == "\t" }) else { return value }
        return "\"" + value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }

    private static func timestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return timestamp(seconds: now.tv_sec, nanoseconds: Int(now.tv_nsec))
    }

    /// ISO 8601 in UTC with milliseconds, `2026-11-27T08:33:15.968Z`, as `Date.ISO8601FormatStyle` writes it, by the
    /// history store's formatter (no Foundation calendar: its `TimeZone` would load ICU for a log line's time).
    static func timestamp(seconds: Int, nanoseconds: Int) -> String {
        iso8601UTC(milliseconds: Int64(seconds) * 1000 + Int64(nanoseconds / 1_000_000))
    }

    /// Writes the line and a newline to standard error in one `write(2)`, so that lines from several threads
    /// never interleave.
    public static func write(_ line: String) {
        var bytes = Array(line.utf8)
        bytes.append(0x0A)
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Foundation.write(STDERR_FILENO, buffer.baseAddress! + offset, buffer.count - offset)
                if written > 0 {
                    offset += written
                } else if written < 0 && errno == EINTR {
                    continue
                } else {
                    return
                }
            }
        }
    }

    /// A line for a message logged before (or without) the logging system: configuration errors, usage errors.
    public static func writeEarly(_ level: Logger.Level, _ message: String, environment: [String: String]) {
        switch format(environment: environment) {
        case .journal: write("<\(journalPriority(level))>parleyd: \(message)")
        case .human: write("parleyd: \(message)")
        }
    }
}
