import ArgumentParser
import Foundation
import Parley
import ParleyControl
import ParleyDrawer

/// `parleyctl drawer [APP]`: the debug drawers of connected apps (docs/drawer.md).
struct Drawer: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List connected apps' debug drawers: their settings and actions, with current values.",
        discussion: """
            Apps offer a drawer of typed settings (toggles, choices, texts, numbers),
            actions and read-only information; change them with `parleyctl set` and
            `parleyctl invoke`, or in the web debugger (parleyctl web).

            Examples:
              parleyctl drawer
              parleyctl drawer Listr --json
            """
    )

    @Argument(help: ArgumentHelp("One app: its name, peer id or id prefix.", valueName: "app"), completion: LiveCompletions.peerNames)
    var app: String?

    @OptionGroup var daemon: DaemonOptions

    @OptionGroup var format: OutputOptions

    func run() async throws {
        // parleyd pages the list (a page stays well under a control frame, however many apps with large drawers).
        var drawers: [AppDrawer] = []
        try await daemon.session { client in
            var after: DrawerControl.Position?
            repeat {
                let page = try await client.control(DrawerControl.Drawers(app: app, after: after), expecting: DrawerControl.List.self)
                drawers += page.drawers
                after = page.next
            } while after != nil
        }
        let list = DrawerControl.List(drawers: drawers)
        if format.json {
            list.drawers.forEach { Output.json($0) }
            return
        }
        guard !list.drawers.isEmpty else {
            Output.line("no connected app offers a drawer")
            return
        }
        for (index, drawer) in list.drawers.enumerated() {
            if index > 0 { Output.line("") }
            Output.line("\(drawer.peer.name.shown) (\(drawer.peer.id.prefix(8)))", style: .heading)
            Table.print(
                ["ITEM", "KIND", "VALUE", "LABEL"], drawer.items.map { [$0.id, $0.kind.rawValue, Self.shown($0), $0.label] },
                caps: [32, 8, 40]
            )
        }
    }

    /// The value as a person reads it, with what else it could be.
    static func shown(_ item: DrawerItem) -> String {
        switch item.kind {
        case .action: return item.destructive == true ? "(action, destructive)" : "(action)"
        case .choice:
            let options = (item.options ?? []).map(\.id).joined(separator: "|")
            return "\(item.value.map(Self.bare) ?? "-") [\(options)]"
        case .number:
            let range = item.min != nil || item.max != nil
                ? " [\(item.min.map { DrawerValue.number($0).description } ?? "")…\(item.max.map { DrawerValue.number($0).description } ?? "")]" : ""
            return (item.value.map(Self.bare) ?? "-") + range
        default:
            return item.value.map(Self.bare) ?? "-"
        }
    }

    static func bare(_ value: DrawerValue) -> String {
        if case .string(let text) = value { return text }
        return value.description
    }
}

/// `parleyctl set APP ITEM VALUE`.
struct SetDrawerValue: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set",
        abstract: "Set a setting of an app's debug drawer.",
        discussion: """
            VALUE is JSON (true, 2500, "dark") or, for a text or a choice, plain text.
            parleyd checks it against the app's drawer (type, options, range, step,
            length) before the app sees it; the answer is the value now in effect, as
            the app confirmed it.

            Examples:
              parleyctl set listr network.slow true
              parleyctl set listr list.style bullets
              parleyctl set listr list.style '"checkboxes"'   # the same kind of value, as JSON
            """
    )

    @Argument(help: ArgumentHelp("The app: name, peer id or id prefix.", valueName: "app"), completion: LiveCompletions.peerNames)
    var app: String

    @Argument(help: ArgumentHelp("The setting's id (parleyctl drawer lists them).", valueName: "item"))
    var item: String

    /// Taken raw, so that `-100` is a value rather than an option.
    @Argument(parsing: .allUnrecognized, help: ArgumentHelp("The value: JSON, or plain text for a text or a choice.", valueName: "value"))
    var values: [String] = []

    @OptionGroup var daemon: DaemonOptions

    @OptionGroup var format: OutputOptions

    func validate() throws {
        guard values.count == 1 else {
            throw ValidationError(values.isEmpty ? "give the value to set (parleyctl set APP ITEM VALUE)" : "give one value; quote text with spaces")
        }
    }

    var value: String { values.first ?? "" }

    func run() async throws {
        let result = try await Drawer.namingCommand(for: .drawerItemIsAction, "parleyctl invoke APP \(item)") {
            try await daemon.session { client in
                // The item's kind says how to read VALUE: for a text or a choice, plain text is the value ("42" stays
                // text); for the others, JSON.
                let drawers = try await client.control(DrawerControl.Drawers(app: app), expecting: DrawerControl.List.self)
                let kind = drawers.drawers.first?.items.first { $0.id == item }?.kind
                return try await client.control(
                    DrawerControl.SetValue(app: app, item: item, value: Self.parse(value, for: kind)), expecting: DrawerMessage.Result.self)
            }
        }
        if format.json {
            Output.json(result)
        } else {
            // The app's words each on the one line: a line break in them must not print a line of its own.
            let shownValue = (result.value.map(Drawer.bare) ?? value).escapedForPeople(maximumBytes: .max)
            Output.line("\(item) = \(shownValue)" + (result.message.map { " (\($0.escapedForPeople(maximumBytes: .max)))" } ?? ""))
        }
    }

    /// For a text or a choice: the text itself, unless it is a JSON string (`"x"`, to write quotes or leading
    /// spaces). Otherwise JSON (`true`, `-100`, `2.5`), or the text when it is not JSON (parleyd then says what the
    /// item takes).
    static func parse(_ text: String, for kind: DrawerItem.Kind?) -> DrawerValue {
        let json = try? JSONDecoder().decode(DrawerValue.self, from: Data(text.utf8))
        switch kind {
        case .text, .choice:
            if case .string = json { return json! }
            return .string(text)
        default:
            return json ?? .string(text)
        }
    }
}

/// `parleyctl invoke APP ITEM`.
struct InvokeDrawerAction: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "invoke",
        abstract: "Run an action of an app's debug drawer and print what the app answers.",
        discussion: """
            Examples:
              parleyctl invoke listr list.reset
            """
    )

    @Argument(help: ArgumentHelp("The app: name, peer id or id prefix.", valueName: "app"), completion: LiveCompletions.peerNames)
    var app: String

    @Argument(help: ArgumentHelp("The action's id (parleyctl drawer lists them).", valueName: "item"))
    var item: String

    @OptionGroup var daemon: DaemonOptions

    @OptionGroup var format: OutputOptions

    func run() async throws {
        let result = try await Drawer.namingCommand(for: .drawerItemIsNotAction, "parleyctl set APP \(item) VALUE") {
            try await daemon.ask(DrawerControl.InvokeAction(app: app, item: item), expecting: DrawerMessage.Result.self)
        }
        if format.json {
            Output.json(result)
        } else {
            Output.line(result.message?.escapedForPeople(maximumBytes: .max) ?? "\(item): done")
        }
    }
}

extension Drawer {
    /// Runs a drawer request; when parleyd refuses it with `code` (the item is of the other kind), its words are
    /// followed by the command that does what was meant.
    static func namingCommand<Value>(
        for code: ControlErrorCode, _ command: String, _ body: () async throws -> Value
    ) async throws -> Value {
        do {
            return try await body()
        } catch TransceiverError.remoteError(let received, let text) where ControlErrorCode(received) == code {
            throw TransceiverError.remoteError(code: received, message: "\(text) (\(command))")
        }
    }
}
