import Foundation
import Testing

@testable import ParleyJSON

@Suite("History timestamps")
struct TimestampTests {
    @Test("milliseconds print as UTC ISO 8601 and read back exactly, across leap days, centuries and before 1970")
    func roundTrip() {
        let cases: [(Int64, String)] = [
            (0, "1970-01-01T00:00:00.000Z"),
            (-1, "1969-12-31T23:59:59.999Z"),
            (951_782_400_000, "2000-02-29T00:00:00.000Z"),
            (4_107_542_399_999, "2100-02-28T23:59:59.999Z"),
            (1_800_000_000_123, "2027-01-15T08:00:00.123Z"),
            (-62_135_596_800_000, "0001-01-01T00:00:00.000Z"),
        ]
        for (milliseconds, text) in cases {
            #expect(Timestamp(milliseconds: milliseconds).iso8601 == text)
            #expect(Timestamp(iso8601: text)?.milliseconds == milliseconds)
        }
        var seed: UInt64 = 42
        for _ in 0..<1000 {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1
            let milliseconds = Int64(seed >> 22) - 1_000_000_000_000
            #expect(Timestamp(iso8601: Timestamp(milliseconds: milliseconds).iso8601)?.milliseconds == milliseconds)
        }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        #expect(Timestamp(milliseconds: 1_800_000_000_123).iso8601 == formatter.string(from: Date(timeIntervalSince1970: 1_800_000_000.123)))
    }

    @Test("other spellings of a time read as expected; malformed or impossible times do not read")
    func parsing() {
        #expect(Timestamp(iso8601: "2027-01-15T08:00:00Z")?.milliseconds == 1_800_000_000_000)
        #expect(Timestamp(iso8601: "2027-01-15T08:00:00.5Z")?.milliseconds == 1_800_000_000_500)
        #expect(Timestamp(iso8601: "2027-01-15T08:00:00.123999Z")?.milliseconds == 1_800_000_000_123)
        for bad in ["2027-01-15 08:00:00Z", "2027-01-15T08:00:00+01:00", "2027-02-29T00:00:00Z", "2027-13-01T00:00:00Z", "2027-01-15T24:00:00Z", "2027-01-15T08:00:00.Z", "2027-01-15T08:00:00", ""] {
            #expect(Timestamp(iso8601: bad) == nil, "\(bad)")
        }
    }
}
