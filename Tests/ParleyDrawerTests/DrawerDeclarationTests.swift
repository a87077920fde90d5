import Foundation
import ParleyDrawer
import Testing

/// The rules a value set from outside must meet, checked by parleyd before the app sees it and by the app again.
@Suite("Drawer declarations and values")
struct DrawerDeclarationTests {
    static let items = [
        DrawerItem(id: "slow", label: "Slow", kind: .toggle, value: .bool(false)),
        DrawerItem(id: "theme", label: "Theme", kind: .choice, value: .string("light"), options: [.init(id: "light", label: "Light"), .init(id: "dark", label: "Dark")]),
        DrawerItem(id: "greeting", label: "Greeting", kind: .text, value: .string("hi"), maxLength: 5),
        DrawerItem(id: "latency", label: "Latency", kind: .number, value: .number(0), min: 0, max: 5000, step: 100),
        DrawerItem(id: "ratio", label: "Ratio", kind: .number, value: .number(0.5), min: 0, max: 1, step: 0.1),
        DrawerItem(id: "reset", label: "Reset", kind: .action),
        DrawerItem(id: "build", label: "Build", kind: .info, value: .string("1.0")),
    ]

    @Test("values of the right kind that fit are accepted as given")
    func accepted() throws {
        let drawer = try DrawerDeclaration(items: Self.items)
        #expect(try drawer.validateSet("slow", .bool(true)) == .bool(true))
        #expect(try drawer.validateSet("theme", .string("dark")) == .string("dark"))
        #expect(try drawer.validateSet("greeting", .string("hello")) == .string("hello"))
        #expect(try drawer.validateSet("latency", .number(2500)) == .number(2500))
        // 0.7 is not a whole number of 0.1 steps in binary floating point, but is in decimal: accepted.
        #expect(try drawer.validateSet("ratio", .number(0.7)) == .number(0.7))
        try drawer.validateInvoke("reset")
    }

    @Test("each way a value can be wrong is refused with its own error")
    func refused() throws {
        let drawer = try DrawerDeclaration(items: Self.items)
        #expect(throws: DrawerError.wrongType(item: "slow", expected: "true or false", got: .number(1))) { try drawer.validateSet("slow", .number(1)) }
        #expect(throws: DrawerError.unknownOption(item: "theme", "blue", options: ["light", "dark"])) { try drawer.validateSet("theme", .string("blue")) }
        #expect(throws: DrawerError.tooLong(item: "greeting", length: 6, limit: 5)) { try drawer.validateSet("greeting", .string("hello!")) }
        #expect(throws: DrawerError.outOfRange(item: "latency", 5100, min: 0, max: 5000)) { try drawer.validateSet("latency", .number(5100)) }
        #expect(throws: DrawerError.offStep(item: "latency", 150, step: 100, base: 0)) { try drawer.validateSet("latency", .number(150)) }
        #expect(throws: DrawerError.notSettable(item: "reset", kind: .action)) { try drawer.validateSet("reset", .bool(true)) }
        #expect(throws: DrawerError.notSettable(item: "build", kind: .info)) { try drawer.validateSet("build", .string("2.0")) }
        #expect(throws: DrawerError.notAnAction(item: "slow", kind: .toggle)) { try drawer.validateInvoke("slow") }
        #expect(throws: DrawerError.self) { try drawer.validateSet("nope", .bool(true)) }
        #expect(DrawerError.unknownItem("nope", known: ["slow"]).description == #"the drawer has no item "nope"; its items: slow"#)
    }

    @Test("a declaration that breaks its own rules is refused: duplicate ids, a choice without options, a value that does not fit")
    func invalidDeclarations() {
        #expect(throws: DrawerError.self) { try DrawerDeclaration(items: [Self.items[0], Self.items[0]]) }
        #expect(throws: DrawerError.self) { try DrawerDeclaration(items: [DrawerItem(id: "c", label: "C", kind: .choice, value: .string("x"), options: [])]) }
        #expect(throws: DrawerError.self) { try DrawerDeclaration(items: [DrawerItem(id: "n", label: "N", kind: .number, value: .number(7), min: 0, max: 5)]) }
        #expect(throws: DrawerError.self) { try DrawerDeclaration(items: [DrawerItem(id: "", label: "empty id", kind: .toggle)]) }
        #expect(throws: DrawerError.self) {
            try DrawerDeclaration(items: (0...DrawerDeclaration.maximumItems).map { DrawerItem(id: "t\($0)", label: "", kind: .toggle) })
        }
    }

    @Test("each field is bounded as docs/drawer.md says: just within the limit taken, just over it refused")
    func fieldLimits() throws {
        func choice(_ option: String, label: String = "A") -> DrawerItem {
            DrawerItem(id: "c", label: "C", kind: .choice, value: .string(option), options: [.init(id: option, label: label)])
        }
        func info(_ value: DrawerValue) -> DrawerItem { DrawerItem(id: "i", label: "I", kind: .info, value: value) }
        func text(maxLength: Int) -> DrawerItem { DrawerItem(id: "t", label: "T", kind: .text, value: .string(""), maxLength: maxLength) }
        func toggle(section: String) -> DrawerItem { DrawerItem(id: "s", label: "S", kind: .toggle, value: .bool(false), section: section) }
        let fitting = [
            choice(String(repeating: "a", count: 128)), choice("a", label: String(repeating: "L", count: 256)),
            info(.string(String(repeating: "é", count: 2048))), text(maxLength: 65536), text(maxLength: 0),
            toggle(section: String(repeating: "S", count: 256)),
        ]
        for item in fitting { _ = try DrawerDeclaration(items: [item]) }
        let over: [(DrawerItem, String)] = [
            (choice(String(repeating: "a", count: 129)), "an option id must be 1–128 bytes"),
            (choice(""), "an option id must be 1–128 bytes"),
            (choice("a", label: String(repeating: "L", count: 257)), "option labels are at most 256 bytes"),
            (info(.string(String(repeating: "é", count: 2049))), "4098 bytes, above 4096"),
            (info(.number(3)), "info is text"),
            (text(maxLength: 65537), "maxLength must be 0–65536"),
            (text(maxLength: -1), "maxLength must be 0–65536"),
            (toggle(section: String(repeating: "S", count: 257)), "at most 256 bytes"),
        ]
        for (item, reason) in over {
            #expect {
                try DrawerDeclaration(items: [item])
            } throws: { error in
                "\(error)".contains(reason)
            }
        }
    }

    @Test("an action may be declared destructive, and it decodes from the wire; no other kind may")
    func destructive() throws {
        let declared = try JSONDecoder().decode(
            DrawerItem.self, from: Data(#"{"id": "list.reset", "label": "Empty the list", "kind": "action", "destructive": true}"#.utf8))
        #expect(declared.destructive == true)
        _ = try DrawerDeclaration(items: [declared, DrawerItem(id: "plain", label: "Plain", kind: .action)])
        for kind in DrawerItem.Kind.allCases where kind != .action {
            let item = DrawerItem(id: "x", label: "X", kind: kind, destructive: true)
            #expect {
                try DrawerDeclaration(items: [item])
            } throws: { error in
                "\(error)".contains("\(kind) \"x\": only an action can be destructive")
            }
        }
        // Not destructive: the same as saying nothing, for every kind.
        _ = try DrawerDeclaration(items: [DrawerItem(id: "t", label: "T", kind: .toggle, value: .bool(false), destructive: false)])
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(DrawerItem.self, from: Data(#"{"id": "a", "label": "A", "kind": "action", "destructive": "yes"}"#.utf8))
        }
    }

    @Test("a Declare payload is at most 256 KiB")
    func declareSize() throws {
        try DrawerDeclaration.checkDeclareSize(256 * 1024)
        #expect(throws: DrawerError.declarationTooLarge(bytes: 256 * 1024 + 1)) { try DrawerDeclaration.checkDeclareSize(256 * 1024 + 1) }
        #expect("\(DrawerError.declarationTooLarge(bytes: 300_000))".contains("300000 bytes of JSON, above the limit of 262144 (256 KiB)"))
    }

    @Test("a Changed payload is at most 256 KiB too")
    func changedSize() throws {
        try DrawerDeclaration.checkChangedSize(256 * 1024)
        #expect(throws: DrawerError.changeTooLarge(bytes: 256 * 1024 + 1)) { try DrawerDeclaration.checkChangedSize(256 * 1024 + 1) }
        #expect("\(DrawerError.changeTooLarge(bytes: 300_000))".contains("300000 bytes of JSON, above the limit of 262144"))
    }
}
