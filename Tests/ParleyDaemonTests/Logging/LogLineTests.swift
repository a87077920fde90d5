import Foundation
import Logging
@testable import ParleyDaemon
import Testing

@Suite("parleyd log lines")
struct LogLineTests {
    @Test("remote text cannot forge a journal record or drive the terminal: control characters are escaped")
    func controlCharactersEscaped() {
        let forged = "x\u{0}<0>forged\n<2>also\r\u{1B}[31mred\u{7F}"
        let line = DaemonLogHandler.line(
            level: .info, label: "parley", message: "peer connection closed",
            metadata: ["peer-name": .string(forged)], format: .journal
        )
        #expect(line.hasPrefix("<6>parley: peer connection closed"))
        #expect(!line.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F })
        #expect(line.contains(#"x\x00<0>forged\n<2>also\r\x1b[31mred\x7f"#))
    }

    @Test("C1 controls, U+2028/U+2029 and bidi overrides are escaped too, and a value from the network is bounded")
    func unicodeAndLength() {
        let name = "a\u{9B}31m\u{2028}b\u{202E}c" + String(repeating: "x", count: 100_000)
        let line = DaemonLogHandler.line(level: .info, label: "parley", message: "m", metadata: ["peer-name": .string(name)], format: .human)
        #expect(line.contains(#"a\x9b31m\u2028b\u202ec"#))
        #expect(!line.unicodeScalars.contains { (0x80...0x9F).contains($0.value) || $0.value == 0x2028 || $0.value == 0x202E })
        #expect(line.utf8.count < 1200, "\(line.utf8.count) bytes")
        #expect(line.hasSuffix("…"))
    }

    @Test("a human line's timestamp is ISO 8601 in UTC with milliseconds, as Foundation writes it, at any instant")
    func timestamp() {
        let style = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
        // The epoch, a leap day, the last millisecond of a year, far ahead, and now. (Foundation goes through a
        // Double: milliseconds that a binary fraction cannot hold, such as .005, may come out one lower there.)
        let instants: [(Int, Int)] = [(0, 0), (951_782_400, 500_000_000), (1_798_761_599, 999_999_999), (4_102_444_800, 125_456_789)]
            + [(Int(Date.now.timeIntervalSince1970), 42_000_000)]
        for (seconds, nanoseconds) in instants {
            let date = Date(timeIntervalSince1970: Double(seconds) + Double(nanoseconds / 1_000_000) / 1000)
            #expect(DaemonLogHandler.timestamp(seconds: seconds, nanoseconds: nanoseconds) == date.formatted(style))
        }
        #expect(DaemonLogHandler.timestamp(seconds: 951_782_400, nanoseconds: 5_000_000) == "2000-02-29T00:00:00.005Z")
    }
}
