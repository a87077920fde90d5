import Foundation
import ParleyControl
import Testing

@Suite("Times in control replies")
struct ControlTimestampTests {
    @Test("a peer's connectedAt is ISO 8601 in UTC with milliseconds, and reads back to the millisecond")
    func milliseconds() throws {
        let date = Date(timeIntervalSince1970: 1_764_259_200.123)
        let text = Control.timestamp(date)
        #expect(text == "2025-11-27T16:00:00.123Z")
        let back = try #require(Control.date(text))
        #expect(abs(back.timeIntervalSince(date)) < 0.001)
        // Written by a parleyd that kept whole seconds.
        #expect(Control.date("2025-11-27T16:00:00Z") == Date(timeIntervalSince1970: 1_764_259_200))
    }
}
