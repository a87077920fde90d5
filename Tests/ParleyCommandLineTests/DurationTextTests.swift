import ParleyCommandLine
import Testing

@Suite("Durations as people write them")
struct DurationTextTests {
    @Test("a number with a unit, or bare seconds, is read as seconds", arguments: [
        ("90s", 90.0), ("90", 90), ("500ms", 0.5), ("30m", 1800), ("12h", 43_200), ("7d", 604_800), ("2w", 1_209_600),
        ("1.5h", 5400), (" 7D ", 604_800), ("10 m", 600), ("0", 0),
    ])
    func reads(text: String, seconds: Double) {
        #expect(DurationText.seconds(text) == seconds, "\(text)")
    }

    @Test("milliseconds are not read as minutes")
    func millisecondsBeforeMinutes() {
        #expect(DurationText.seconds("500ms") == 0.5)
        #expect(DurationText.seconds("500m") == 30_000)
    }

    @Test("anything else is no duration", arguments: ["", "s", "soon", "7 days", "1h30m", "inf", "nan", "1e999s", "--5m", "5x"])
    func rejects(text: String) {
        #expect(DurationText.seconds(text) == nil, "\(text)")
    }
}
