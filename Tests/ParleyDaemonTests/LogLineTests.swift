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
        #expect(line.contains(#"x\u{0}<0>forged\n<2>also\r\u{1B}[31mred\u{7F}"#))
    }
}
