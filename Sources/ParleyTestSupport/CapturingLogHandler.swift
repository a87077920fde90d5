import Logging
import Synchronization

/// Collects log records in memory so a test can assert what was logged. One per test; never bootstrapped globally.
public final class LogCapture: Sendable {
    public struct Record: Sendable {
        public var level: Logger.Level
        public var message: String
        public var metadata: [String: String]
    }

    private let records = Observed<[Record]>([])

    public init() {}

    public var logger: Logger {
        var logger = Logger(label: "parley.test") { _ in Handler(capture: self) }
        logger.logLevel = .debug
        return logger
    }

    public var all: [Record] { records.value }

    /// Records at `level` or above whose message or metadata mention `text`.
    public func records(atLeast level: Logger.Level = .warning, mentioning text: String) -> [Record] {
        Self.matching(records.value, atLeast: level, mentioning: text)
    }

    /// Whether such a record is logged within `timeout`: at once if one already is, else when it is appended.
    /// Each record is looked at once: the check runs on every append, on the thread that logs (often an event
    /// loop), so scanning the whole log each time would slow the loops of every test running beside this one.
    public func logged(atLeast level: Logger.Level = .warning, mentioning text: String, timeout: Duration = .seconds(30)) async -> Bool {
        let scanned = Mutex(0)
        return (try? await records.wait(for: "a log record mentioning \(text)", timeout: timeout) { records in
            scanned.withLock { start in
                defer { start = records.count }
                return Self.matching(records[min(start, records.count)...], atLeast: level, mentioning: text).isEmpty ? nil : true
            }
        }) ?? false
    }

    private static func matching(_ records: some Collection<Record>, atLeast level: Logger.Level, mentioning text: String) -> [Record] {
        records.filter { record in
            record.level >= level
                && (record.message.contains(text) || record.metadata.values.contains { $0.contains(text) })
        }
    }

    fileprivate func append(_ record: Record) { records.update { $0.append(record) } }

    private struct Handler: LogHandler {
        let capture: LogCapture
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .debug

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            var merged = metadata
            for (key, value) in event.metadata ?? [:] { merged[key] = value }
            capture.append(
                Record(level: event.level, message: "\(event.message)", metadata: merged.mapValues { "\($0)" })
            )
        }
    }
}
