import Foundation

/// One recorded state change without its state and screenshot: what lists and pages carry.
public struct EntrySummary: Sendable, Hashable, Codable {
    /// Unique in the whole history and increasing in recording order (never reused, even after retention has
    /// dropped entries), so `parleyctl show N` is unambiguous.
    public var sequence: Int64
    /// ``SessionSummary/id``
    public var session: Int64
    public var time: Date
    public var action: String
    /// Bytes of state JSON.
    public var stateSize: Int
    /// Bytes of PNG; 0 without a screenshot.
    public var screenshotSize: Int

    public init(sequence: Int64, session: Int64, time: Date, action: String, stateSize: Int, screenshotSize: Int) {
        self.sequence = sequence
        self.session = session
        self.time = time
        self.action = action
        self.stateSize = stateSize
        self.screenshotSize = screenshotSize
    }
}
