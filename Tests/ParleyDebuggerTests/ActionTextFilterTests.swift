import Foundation
import ParleyDebugger
import Testing

@Suite("Action text filters")
struct ActionTextFilterTests {
    @Test("globs match the whole action: * any run, ? one character, backslash escapes, case counts")
    func globs() throws {
        let cases: [(String, String, Bool)] = [
            ("hover*", "hoverChanged(true)", true),
            ("hover*", "hover", true),
            ("hover*", "mouseHover", false),
            ("hover*", "Hover", false),
            ("*.tick", "clock.tick", true),
            ("*.tick", "clock.tick.x", false),
            ("window.*.visibility*", "window.main.visibilityChanged", true),
            ("a?c", "abc", true),
            ("a?c", "ac", false),
            ("a?c", "añc", true),
            ("a?c", "a😀c", true),
            (#"a\*c"#, "a*c", true),
            (#"a\*c"#, "abc", false),
            (#"what\?"#, "what?", true),
            (#"back\\slash"#, #"back\slash"#, true),
            ("*", "", true),
            ("", "", true),
            ("", "x", false),
            ("**a**b**", "xaxxbx", true),
            ("*a*b", "aaab", true),
            ("*a*b", "aaabx", false),
            ("[x]", "[x]", true),
        ]
        for (pattern, action, expected) in cases {
            #expect(try ActionGlob(pattern).matches(action) == expected, "\(pattern) on \(action)")
            #expect(try ActionTextFilter.pattern(pattern).includes(action) == expected)
        }
        #expect(throws: ActionFilterError.invalidPattern(#"oops\"#, reason: #"it ends with a lone '\' (write '\\' for a backslash)"#)) {
            try ActionGlob(#"oops\"#)
        }
    }

    @Test("all, not, anyOf and allExcept compose; empty anyOf includes nothing, empty allExcept everything")
    func composition() throws {
        let noisy = ActionTextFilter.anyOf([.pattern("hover*"), .pattern("window.visibility*")])
        let quiet = ActionTextFilter.allExcept([noisy, .pattern("*.tick")])
        #expect(try quiet.includes("addItem"))
        #expect(try !quiet.includes("hoverStarted"))
        #expect(try !quiet.includes("window.visibilityChanged"))
        #expect(try !quiet.includes("clock.tick"))
        #expect(try noisy.includes("hoverEnded"))
        #expect(try ActionTextFilter.not(noisy).includes("addItem"))
        #expect(try !ActionTextFilter.not(.all).includes("anything"))
        #expect(try ActionTextFilter.all.includes(""))
        #expect(try !ActionTextFilter.anyOf([]).includes("x"))
        #expect(try ActionTextFilter.allExcept([]).includes("x"))
    }

    @Test("names refer to saved filters, also from inside other saved filters")
    func namedReferences() throws {
        let saved: [String: ActionTextFilter] = [
            "noisy": .anyOf([.pattern("hover*"), .named("ticks")]),
            "ticks": .pattern("*.tick"),
            "quiet": .allExcept([.named("noisy")]),
        ]
        try ActionTextFilter.validate(saved)
        let matcher = try ActionTextFilter.Matcher(.named("quiet"), named: saved)
        #expect(matcher.includes("save"))
        #expect(!matcher.includes("hoverMoved"))
        #expect(!matcher.includes("clock.tick"))
        #expect(matcher.filter == .allExcept([.anyOf([.pattern("hover*"), .pattern("*.tick")])]))
        #expect(try ActionTextFilter.not(.named("ticks")).includes("clock.tick", named: saved) == false)
    }

    @Test("an unknown name is an error saying which filter uses it")
    func unknownName() {
        let saved: [String: ActionTextFilter] = ["quiet": .allExcept([.named("noisy")])]
        #expect(throws: ActionFilterError.unknownFilter("noisy", referencedBy: "quiet")) { try ActionTextFilter.validate(saved) }
        #expect(throws: ActionFilterError.unknownFilter("loud", referencedBy: nil)) { try ActionTextFilter.named("loud").includes("x", named: saved) }
        #expect(
            ActionFilterError.unknownFilter("noisy", referencedBy: "quiet").description
                == #"the saved action filter "quiet" refers to no saved action filter named "noisy"; save it under actionFilters in parleyd's configuration or fix the name"#
        )
    }

    @Test("filters that refer to each other in a loop are an error naming the loop")
    func cycle() {
        let saved: [String: ActionTextFilter] = [
            "a": .anyOf([.pattern("x"), .named("b")]),
            "b": .not(.named("c")),
            "c": .allExcept([.named("a")]),
            "self": .named("self"),
        ]
        #expect(throws: ActionFilterError.cycle(["a", "b", "c", "a"])) { try ActionTextFilter.validate(saved) }
        #expect(throws: ActionFilterError.cycle(["self", "self"])) { try ActionTextFilter.named("self").resolved(in: saved) }
        #expect(ActionFilterError.cycle(["a", "b", "a"]).description.contains("(a → b → a)"))
    }

    @Test("the configuration spelling decodes to the filters it reads as, and encodes back the same")
    func jsonSpelling() throws {
        let json = #"""
            {
              "noisy": {"anyOf": ["hover*", "window.visibility*"]},
              "quiet": {"allExcept": [{"filter": "noisy"}, "*.tick"]},
              "none": {"not": {"all": true}}
            }
            """#
        let saved = try JSONDecoder().decode([String: ActionTextFilter].self, from: Data(json.utf8))
        #expect(
            saved == [
                "noisy": .anyOf([.pattern("hover*"), .pattern("window.visibility*")]),
                "quiet": .allExcept([.named("noisy"), .pattern("*.tick")]),
                "none": .not(.all),
            ]
        )
        for filter in saved.values {
            let encoded = try JSONEncoder().encode(filter)
            #expect(String(decoding: encoded, as: UTF8.self) == filter.description)
            #expect(try JSONDecoder().decode(ActionTextFilter.self, from: encoded) == filter)
        }
    }

    @Test("a filter object with a misspelt or second key is rejected, naming the keys found")
    func badSpelling() {
        func decodingMessage(_ json: String) -> String? {
            do {
                _ = try JSONDecoder().decode(ActionTextFilter.self, from: Data(json.utf8))
                return nil
            } catch DecodingError.dataCorrupted(let context) {
                return context.debugDescription
            } catch {
                return "\(error)"
            }
        }
        #expect(decodingMessage(#"{"anyof": ["a"]}"#) == "an action filter object has exactly one of the keys all, not, anyOf, allExcept, filter; found anyof")
        #expect(decodingMessage(#"{"not": "a", "all": true}"#)?.hasSuffix("found all, not") == true)
        #expect(decodingMessage(#"{"all": false}"#)?.contains(#"{"not": {"all": true}}"#) == true)
        #expect(decodingMessage("12")?.hasPrefix("an action filter is a pattern string") == true)
    }
}
