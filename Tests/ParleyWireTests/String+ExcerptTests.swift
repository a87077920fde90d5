import ParleyWire
import Testing

@Suite("Remote text for people")
struct EscapedForPeopleTests {
    @Test("controls, C1, line separators and bidi overrides become visible escapes; plain text is untouched; the length is bounded")
    func escaping() {
        #expect("kitchen-tablet ü 名前".escapedForPeople() == "kitchen-tablet ü 名前")
        #expect(!"kitchen-tablet ü 名前".needsEscapingForPeople)
        let osc52 = "\u{1B}]52;c;ZXZpbA==\u{07}"
        #expect(osc52.escapedForPeople() == #"\x1b]52;c;ZXZpbA==\x07"#)
        #expect("a\u{9B}2Jb\u{2028}c\u{2029}d\u{202E}e\u{2066}f\tg\nh\r".escapedForPeople() == #"a\x9b2Jb\u2028c\u2029d\u202ee\u2066f\tg\nh\r"#)
        let long = String(repeating: "é", count: 100)
        let cut = long.escapedForPeople(maximumBytes: 11)
        #expect(cut == String(repeating: "é", count: 5) + "…")
    }
}
