import Foundation

/// Durations as people write them in parleyd's configuration and on parleyctl's command line: a number of
/// seconds, or a number with a unit — `500ms`, `90s`, `30m`, `12h`, `7d`, `2w`.
public enum DurationText {
    /// The seconds `text` stands for, or nil if it is not a duration.
    public static func seconds(_ text: String) -> Double? {
        let trimmed = text.trimmingCharacters(in: .whitespaces).lowercased()
        // "ms" before "s" and "m", so that 500ms is not read as 500m.
        let units: [(suffix: String, seconds: Double)] = [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600), ("d", 86400), ("w", 604_800)]
        let unit = units.first { trimmed.hasSuffix($0.suffix) }
        let digits = unit.map { String(trimmed.dropLast($0.suffix.count)).trimmingCharacters(in: .whitespaces) } ?? trimmed
        guard let amount = Double(digits), amount.isFinite else { return nil }
        return amount * (unit?.seconds ?? 1)
    }
}
