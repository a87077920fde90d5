import NIOCore
import ParleyJSON

/// One recorded state change in full.
///
/// In JSON, `state` is a string holding the state's JSON text (exactly the recorded bytes once decoded) and
/// `screenshot` is base64: `{"summary": {…}, "state": "{\"count\":1.10}", "screenshot": "iVBORw0…"}`.
public struct EntryDetail: Sendable, Equatable, Codable {
    public var summary: EntrySummary
    /// The state's JSON text, byte for byte as recorded.
    public var state: ByteBuffer
    /// PNG bytes; empty without a screenshot.
    public var screenshot: ByteBuffer

    public init(summary: EntrySummary, state: ByteBuffer, screenshot: ByteBuffer) {
        self.summary = summary
        self.state = state
        self.screenshot = screenshot
    }

    /// The entry as the record an app would send (for replay and re-export).
    public var record: StateRecord {
        StateRecord(action: summary.action, state: state, screenshot: screenshot)
    }

    private enum CodingKeys: String, CodingKey {
        case summary, state, screenshot
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        summary = try container.decode(EntrySummary.self, forKey: .summary)
        state = ByteBuffer(string: try container.decode(String.self, forKey: .state))
        do {
            screenshot = try Base64.decode(try container.decode(String.self, forKey: .screenshot))
        } catch let error as Base64Error {
            throw DecodingError.dataCorruptedError(forKey: .screenshot, in: container, debugDescription: error.description)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(summary, forKey: .summary)
        // Recorded states are validated JSON, hence UTF-8: the string holds exactly these bytes.
        try container.encode(String(buffer: state), forKey: .state)
        try container.encode(Base64.encode(screenshot), forKey: .screenshot)
    }
}
