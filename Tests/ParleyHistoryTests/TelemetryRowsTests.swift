import Foundation
import ParleyJSON
@testable import ParleyHistory
import ParleyTelemetry
import Testing

@Suite("History: how log records and spans are written")
struct TelemetryRowsTests {
    @Test("metadata is written as JSON with sorted keys that reads back as the same values: doubles stay doubles, text is escaped, NaN is a string")
    func attributesText() {
        let attributes: TelemetryAttributes = [
            "z": .double(2), "a": .string("line\nbreak \"q\" \\ \u{1B}[31m ✓ /path"), "m": .map(["b": .int(-1), "a": .array([.bool(true), .double(1e-7)])]),
            "n": .double(.nan),
        ]
        let text = TelemetryRows.json(attributes)
        #expect(text.hasPrefix(#"{"a":"line\nbreak \"q\" \\ \u001b[31m ✓ /path","m":{"a":[true,1e-07],"b":-1},"n":"nan","z":2.0}"#))
        var expected = attributes
        expected["n"] = .string("nan")
        #expect(TelemetryRows.decode(text, JSONValueDecoder()) == expected)
        #expect(TelemetryRows.json([:]) == "")
    }
}
