import Foundation
import NIOCore
import ParleyJSON
import Testing

@Suite("State diff")
struct StateDiffTests {
    private func diff(_ old: String, _ new: String) throws -> StateDiff {
        try StateDiff(old: ByteBuffer(string: old), new: ByteBuffer(string: new))
    }

    private typealias Change = StateDiff.Change

    private func fragment(_ text: String) -> JSONFragment { JSONFragment(text: text) }

    @Test("equal states give no changes, whatever the member order, whitespace, number spelling or escapes")
    func equalStates() throws {
        let old = #"{"a": 1, "b": {"list": [1.0, "é", null], "flag": true}}"#
        let new = #"{"b":{"flag":true,"list":[1,"\u00e9",null]},"a":1.00}"#
        let result = try diff(old, new)
        #expect(result.isEmpty)
        #expect(result.text() == "(no changes)")
        #expect(try diff("[]", " [] ").isEmpty)
    }

    @Test("changes deep inside nested objects are reported with their full paths, added and removed members too")
    func nestedObjects() throws {
        let old = #"{"user":{"name":"Ann","address":{"city":"Oslo","zip":"0150"},"age":30},"theme":"dark"}"#
        let new = #"{"user":{"name":"Ann","address":{"city":"Bergen","zip":"0150","country":"NO"},"age":31},"theme":"dark"}"#
        let result = try diff(old, new)
        #expect(
            result.changes == [
                Change(path: ["user", "address", "city"], kind: .changed, old: fragment(#""Oslo""#), new: fragment(#""Bergen""#)),
                Change(path: ["user", "address", "country"], kind: .added, new: fragment(#""NO""#)),
                Change(path: ["user", "age"], kind: .changed, old: fragment("30"), new: fragment("31")),
            ]
        )
        let removed = try diff(#"{"a":{"b":1,"c":{"d":[1, 2]}}}"#, #"{"a":{"b":1}}"#)
        #expect(removed.changes == [Change(path: ["a", "c"], kind: .removed, old: fragment(#"{"d":[1,2]}"#))])
    }

    @Test("arrays are compared by index; a count change comes first, then changed elements, then the grown or shrunk tail")
    func arraysGrowAndShrink() throws {
        let grown = try diff(#"{"items":[{"t":"milk"},{"t":"eggs"}]}"#, #"{"items":[{"t":"oat milk"},{"t":"eggs"},{"t":"tea"}]}"#)
        #expect(
            grown.changes == [
                Change(path: ["items"], kind: .countChanged, oldCount: 2, newCount: 3),
                Change(path: ["items", 0, "t"], kind: .changed, old: fragment(#""milk""#), new: fragment(#""oat milk""#)),
                Change(path: ["items", 2], kind: .added, new: fragment(#"{"t":"tea"}"#)),
            ]
        )
        let shrunk = try diff("[1, 2, 3, 4]", "[1, 5]")
        #expect(
            shrunk.changes == [
                Change(path: [], kind: .countChanged, oldCount: 4, newCount: 2),
                Change(path: [1], kind: .changed, old: fragment("2"), new: fragment("5")),
                Change(path: [2], kind: .removed, old: fragment("3")),
                Change(path: [3], kind: .removed, old: fragment("4")),
            ]
        )
        #expect(try diff(#"{"a":[]}"#, #"{"a":[[]]}"#).changes == [
            Change(path: ["a"], kind: .countChanged, oldCount: 0, newCount: 1),
            Change(path: ["a", 0], kind: .added, new: fragment("[]")),
        ])
    }

    @Test("a value that becomes null, comes from null or changes JSON type is one type change")
    func nullsAndTypeChanges() throws {
        let result = try diff(
            #"{"a":null,"b":1,"c":"1","d":{"x":1},"e":[1],"f":true,"g":null}"#,
            #"{"a":{"x":1},"b":null,"c":1,"d":[1],"e":{"0":1},"f":false,"g":null}"#
        )
        #expect(
            result.changes == [
                Change(path: ["a"], kind: .typeChanged, old: fragment("null"), new: fragment(#"{"x":1}"#)),
                Change(path: ["b"], kind: .typeChanged, old: fragment("1"), new: fragment("null")),
                Change(path: ["c"], kind: .typeChanged, old: fragment(#""1""#), new: fragment("1")),
                Change(path: ["d"], kind: .typeChanged, old: fragment(#"{"x":1}"#), new: fragment("[1]")),
                Change(path: ["e"], kind: .typeChanged, old: fragment("[1]"), new: fragment(#"{"0":1}"#)),
                Change(path: ["f"], kind: .changed, old: fragment("true"), new: fragment("false")),
            ]
        )
        #expect(try diff("null", "{}").changes == [Change(path: [], kind: .typeChanged, old: fragment("null"), new: fragment("{}"))])
    }

    @Test("Unicode member names match by their scalars, escaped or not, and print bare")
    func unicodeKeys() throws {
        let result = try diff(
            #"{"名前":"太郎","café":1,"e\u0301":2,"emoji😀":{"ü":1}}"#,
            #"{"名前":"花子","caf\u00e9":1,"é":2,"emoji😀":{"ü":2}}"#
        )
        #expect(
            result.changes == [
                Change(path: ["名前"], kind: .changed, old: fragment(#""太郎""#), new: fragment(#""花子""#)),
                Change(path: ["é"], kind: .added, new: fragment("2")),
                Change(path: ["emoji😀", "ü"], kind: .changed, old: fragment("1"), new: fragment("2")),
                Change(path: ["e\u{301}"], kind: .removed, old: fragment("2")),
            ]
        )
        #expect(result.text() == """
            名前: "太郎" → "花子"
            + é: 2
            emoji😀:
              ü: 1 → 2
            - é: 2
            """)
    }

    @Test("the text rendering nests path labels, marks added and removed values, names type changes and cuts long values")
    func textRendering() throws {
        let old = #"{"items":[{"title":"milk","n":1},{"title":"eggs"},{"title":"bread"}],"settings":{"theme":null,"zoom":"1","old flag":true},"log":"\#(String(repeating: "x", count: 200))"}"#
        let new = #"{"items":[{"title":"milk","n":1},{"title":"oat milk"}],"settings":{"theme":"dark","zoom":1,"fontSize":14},"log":"y"}"#
        let result = try diff(old, new)
        #expect(result.text() == """
            items: count 3 → 2
              [1]:
                title: "eggs" → "oat milk"
              - [2]: {"title":"bread"}
            settings:
              theme: null → "dark"
              zoom: "1" → 1 (string → number)
              + fontSize: 14
              - "old flag": true
            log: "\(String(repeating: "x", count: 119))… → "y"
            """)
        #expect(result.changes[1].path.description == "items[1].title")
        #expect(result.changes.last { $0.kind == .removed }?.path.description == #"settings["old flag"]"#)
    }

    @Test("the JSON rendering carries paths as arrays and as text, values as exact JSON text, and decodes back to the same diff")
    func jsonRendering() throws {
        let result = try diff(#"{"a":[1.10,{"b":1e400}]}"#, #"{"a":[1.100,{"b":2e400}, true]}"#)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let json = String(decoding: try encoder.encode(result), as: UTF8.self)
        #expect(json == #"{"changes":[{"kind":"countChanged","newCount":3,"oldCount":2,"path":["a"],"pathText":"a"},{"kind":"changed","new":"2e400","old":"1e400","path":["a",1,"b"],"pathText":"a[1].b"},{"kind":"added","new":"true","path":["a",2],"pathText":"a[2]"}]}"#)
        #expect(try JSONDecoder().decode(StateDiff.self, from: Data(json.utf8)) == result)
    }

    @Test("members match by name in small and large objects alike, whatever their order; of duplicate names the last counts")
    func memberMatching() throws {
        for count in [3, 40] {
            let keys = (0..<count).map { "k\($0)" }
            let old = "{" + keys.map { #""\#($0)":1"# }.joined(separator: ",") + "}"
            let new = "{" + keys.reversed().map { #""\#($0)":\#($0 == "k1" ? 2 : 1)"# }.joined(separator: ",") + #","extra":true}"#
            #expect(
                try diff(old, new).changes == [
                    Change(path: ["k1"], kind: .changed, old: fragment("1"), new: fragment("2")),
                    Change(path: ["extra"], kind: .added, new: fragment("true")),
                ],
                "\(count) members"
            )
            let padding = keys.map { #""\#($0)":0"# }.joined(separator: ",")
            let duplicates = try diff(#"{"a":1,"# + padding + #","a":2}"#, #"{"# + padding + #","a":3,"a":2}"#)
            #expect(duplicates.isEmpty, "\(count) members: \(duplicates)")
            let changedDuplicate = try diff(#"{"a":1,"# + padding + #","a":2}"#, #"{"a":2,"# + padding + #","a":1}"#)
            #expect(changedDuplicate.changes == [Change(path: ["a"], kind: .changed, old: fragment("2"), new: fragment("1"))])
        }
    }

    @Test("a state that is not JSON is an error that says which side and where")
    func invalidInput() {
        #expect(throws: StateDiffError(side: .new, error: JSONError(offset: 6, reason: .unexpectedEnd(expected: "',' or '}' after an object member")))) {
            try diff("{}", #"{"a":1"#)
        }
        #expect(throws: StateDiffError(side: .old, error: JSONError(offset: 0, reason: .unexpectedByte(UInt8(ascii: "x"), expected: "a JSON value")))) {
            try diff("x", "{}")
        }
    }
}

@Suite("State diff time limit")
struct StateDiffTimeLimitTests {
    /// Two arrays of `count` small objects that all differ: a diff that has to visit every element.
    static func states(_ count: Int) -> (ByteBuffer, ByteBuffer) {
        let old = "[" + (0..<count).map { #"{"v":\#($0)}"# }.joined(separator: ",") + "]"
        let new = "[" + (0..<count).map { #"{"v":\#($0 + 1)}"# }.joined(separator: ",") + "]"
        return (ByteBuffer(string: old), ByteBuffer(string: new))
    }

    @Test("a diff that would run past its time limit is given up with the limit named; within it, it is complete")
    func timeLimit() throws {
        // The differ reads the clock every 4096 values compared; 20 000 changes pass that mark several times, and no
        // diff of them meets a limit of a nanosecond, however fast the machine. (Not bigger: a test that computes for
        // seconds holds one of the cooperative pool's threads, and on two cores that is half of it.)
        let (old, new) = Self.states(20_000)
        #expect(throws: StateDiffTimeLimitExceeded(limit: .nanoseconds(1))) {
            try StateDiff(old: old, new: new, timeLimit: .nanoseconds(1))
        }
        let (smallOld, smallNew) = Self.states(3)
        let diff = try StateDiff(old: smallOld, new: smallNew, timeLimit: .seconds(60))
        #expect(diff.changes.map(\.path.description) == ["[0].v", "[1].v", "[2].v"])
    }
}
