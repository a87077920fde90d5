import Testing

@testable import ParleyDNSSD

@Suite("Alternative names on a name conflict")
struct AlternativeNameTests {
    @Test func avahiStyleCountsUpFromTwo() {
        #expect(AlternativeName.next(after: "Kitchen", style: .avahi) == "Kitchen #2")
        #expect(AlternativeName.next(after: "Kitchen #2", style: .avahi) == "Kitchen #3")
        #expect(AlternativeName.next(after: "Kitchen #9", style: .avahi) == "Kitchen #10")
        // Only a number after the last " #" counts, and not one starting with 0.
        #expect(AlternativeName.next(after: "Room #2 east", style: .avahi) == "Room #2 east #2")
        #expect(AlternativeName.next(after: "Room #0", style: .avahi) == "Room #0 #2")
        #expect(AlternativeName.next(after: "Room #", style: .avahi) == "Room # #2")
    }

    @Test func bonjourStyleCountsUpFromTwo() {
        #expect(AlternativeName.next(after: "Kitchen", style: .bonjour) == "Kitchen (2)")
        #expect(AlternativeName.next(after: "Kitchen (2)", style: .bonjour) == "Kitchen (3)")
        #expect(AlternativeName.next(after: "Kitchen (99)", style: .bonjour) == "Kitchen (100)")
        #expect(AlternativeName.next(after: "Kitchen (two)", style: .bonjour) == "Kitchen (two) (2)")
    }

    @Test func theResultStaysWithin63BytesWithoutSplittingACharacter() {
        let long = String(repeating: "a", count: 63)
        #expect(AlternativeName.next(after: long, style: .avahi) == String(repeating: "a", count: 60) + " #2")
        #expect(AlternativeName.next(after: long, style: .bonjour) == String(repeating: "a", count: 59) + " (2)")
        // 21 three-byte characters: 63 bytes. Room for 20 before " #2"; none is cut in half.
        let wide = String(repeating: "€", count: 21)
        let next = AlternativeName.next(after: wide, style: .avahi)
        #expect(next == String(repeating: "€", count: 20) + " #2")
        #expect(next.utf8.count == 63)
        // A longer number takes more room from the name.
        let numbered = String(repeating: "b", count: 59) + " #9"
        #expect(AlternativeName.next(after: numbered, style: .avahi) == String(repeating: "b", count: 59) + " #10")
        #expect(AlternativeName.next(after: numbered, style: .avahi).utf8.count == 63)
    }

    @Test func thePlatformStyleIsTheDaemonsOwn() {
        #if os(Linux)
        #expect(AlternativeName.Style.platform == .avahi)
        #else
        #expect(AlternativeName.Style.platform == .bonjour)
        #endif
    }
}
