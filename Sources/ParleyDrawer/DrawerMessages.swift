import ParleyWire

/// The drawer's messages (docs/drawer.md), between an app and parleyd, and the control requests parleyctl sends
/// parleyd about them.
public enum DrawerMessage {
    /// App → parleyd, one-way: the whole drawer; replaces an earlier one.
    public struct Declare: Codable, Sendable, Hashable, NamedMessage {
        public static let messageType = "parley.drawer.Declare"
        public var items: [DrawerItem]
        public init(items: [DrawerItem]) { self.items = items }
    }

    /// App → parleyd, one-way: the app changed a value itself.
    public struct Changed: Codable, Sendable, Hashable, NamedMessage {
        public static let messageType = "parley.drawer.Changed"
        public var item: String
        public var value: DrawerValue
        public init(item: String, value: DrawerValue) {
            self.item = item
            self.value = value
        }
    }

    /// parleyd → app, request → ``Result`` with the value now in effect.
    public struct Set: Codable, Sendable, Hashable, NamedMessage {
        public static let messageType = "parley.drawer.Set"
        public var item: String
        public var value: DrawerValue
        public init(item: String, value: DrawerValue) {
            self.item = item
            self.value = value
        }
    }

    /// parleyd → app, request → ``Result`` with the action's message.
    public struct Invoke: Codable, Sendable, Hashable, NamedMessage {
        public static let messageType = "parley.drawer.Invoke"
        public var item: String
        public init(item: String) { self.item = item }
    }

    public struct Result: Codable, Sendable, Hashable, NamedMessage {
        public static let messageType = "parley.drawer.Result"
        public var value: DrawerValue?
        public var message: String?
        public init(value: DrawerValue? = nil, message: String? = nil) {
            self.value = value
            self.message = message
        }
    }

    /// App → parleyd, request → ``Values``: the values remembered for this app's name.
    public struct Remembered: Codable, Sendable, Hashable, NamedMessage {
        public static let messageType = "parley.drawer.Remembered"
        public init() {}
    }

    public struct Values: Codable, Sendable, Hashable, NamedMessage {
        public static let messageType = "parley.drawer.Values"
        public var values: [String: DrawerValue]
        public init(values: [String: DrawerValue]) { self.values = values }
    }
}

/// parleyctl → parleyd on the control socket.
public enum DrawerControl {
    /// → ``List``: the drawers of connected apps (one app's with `app`: name, id or id prefix).
    /// → ``List``: one page of the connected apps' drawers, in order of app name and peer id, from after `after`.
    public struct Drawers: Codable, Sendable, Hashable, NamedMessage {
        public static let messageType = "parley.drawer.control.Drawers"
        public var app: String?
        public var after: Position?
        public init(app: String? = nil, after: Position? = nil) {
            self.app = app
            self.after = after
        }
    }

    /// Where a page of drawers ended: the last app's name and peer id.
    public struct Position: Codable, Sendable, Hashable, Comparable {
        public var name: String
        public var id: String
        public init(name: String, id: String) {
            self.name = name
            self.id = id
        }
        public static func < (lhs: Position, rhs: Position) -> Bool { (lhs.name, lhs.id) < (rhs.name, rhs.id) }
    }

    /// A page of drawers: as many whole drawers as fit well under a control frame (at least one), and where the
    /// next page starts (nil on the last).
    public struct List: Codable, Sendable, Hashable, NamedMessage {
        public static let messageType = "parley.drawer.control.List"
        public var drawers: [AppDrawer]
        public var next: Position?
        public init(drawers: [AppDrawer], next: Position? = nil) {
            self.drawers = drawers
            self.next = next
        }
    }

    /// → ``DrawerMessage/Result`` from the app.
    public struct SetValue: Codable, Sendable, Hashable, NamedMessage {
        public static let messageType = "parley.drawer.control.Set"
        public var app: String
        public var item: String
        public var value: DrawerValue
        public init(app: String, item: String, value: DrawerValue) {
            self.app = app
            self.item = item
            self.value = value
        }
    }

    /// → ``DrawerMessage/Result`` from the app.
    public struct InvokeAction: Codable, Sendable, Hashable, NamedMessage {
        public static let messageType = "parley.drawer.control.Invoke"
        public var app: String
        public var item: String
        public init(app: String, item: String) {
            self.app = app
            self.item = item
        }
    }
}

/// A connected app and its drawer.
public struct AppDrawer: Codable, Sendable, Hashable {
    public struct App: Codable, Sendable, Hashable {
        public var id: String
        public var name: String
        public init(id: String, name: String) {
            self.id = id
            self.name = name
        }
    }

    public var peer: App
    public var items: [DrawerItem]
    public init(peer: App, items: [DrawerItem]) {
        self.peer = peer
        self.items = items
    }
}
